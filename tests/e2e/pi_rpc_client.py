"""A small synchronous client for one ``pi --mode rpc`` process, for end-to-end tests and the
benchmarks (``bench/``), which time records by their arrival.

Commands go to stdin as JSON lines; stdout is read as bytes and split on ``\\n`` only (Pi writes
U+2028/U+2029 raw). Every record is kept, in order, with the ``perf_counter_ns`` at which it
arrived; ``wait_for`` scans forward from a cursor.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

Record = dict[str, Any]
Stamped = tuple[int, Record]
"""A record with the ``time.perf_counter_ns()`` at which it arrived."""
Predicate = Callable[[Record], bool]


class PiRpcError(AssertionError):
    """Pi did not answer as the test expected (timeout, exit, failed command)."""


class PiRpcClient:
    """``own_session``: Pi leads a process group of its own, and ``close`` kills that whole
    group when Pi does not exit in time (the benchmarks: a stuck bridge goes too)."""

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: str | Path,
        *,
        own_session: bool = False,
    ) -> None:
        self.argv = list(argv)
        self.started_ns = time.perf_counter_ns()
        self._own_session = own_session
        self.process = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            start_new_session=own_session,
        )
        self.records: list[Record] = []
        self.arrived_ns: list[int] = []
        """``arrived_ns[i]``: when ``records[i]`` arrived."""
        self._cursor = 0
        self._ended = False
        self._changed = threading.Condition()
        self._stderr = bytearray()
        self._ids = itertools.count(1)
        assert self.process.stdout is not None
        assert self.process.stderr is not None
        self._threads = [
            threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True),
            threading.Thread(target=self._drain, args=(self.process.stderr,), daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    # -- reading --------------------------------------------------------------------------------

    def _read(self, stream: IO[bytes]) -> None:
        buffer = b""
        read = getattr(stream, "read1", stream.read)
        while chunk := read(65536):
            arrived = time.perf_counter_ns()
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            decoded = [json.loads(line) for line in lines if line.strip()]
            with self._changed:
                self.records.extend(decoded)
                self.arrived_ns.extend([arrived] * len(decoded))
                self._changed.notify_all()
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def _drain(self, stream: IO[bytes]) -> None:
        while chunk := stream.read1(4096):  # type: ignore[attr-defined]
            self._stderr.extend(chunk)

    def stderr(self) -> str:
        return self._stderr.decode("utf-8", "replace")

    def skip(self) -> None:
        """Move the cursor past every record received so far."""
        with self._changed:
            self._cursor = len(self.records)

    def wait_for(self, predicate: Predicate, timeout: float = 30.0) -> list[Record]:
        """The records from the cursor up to and including the first matching one; the cursor
        moves past it."""
        span = self._await(predicate, timeout, from_start=False)
        return self.records[span.start : span.stop]

    def find(self, predicate: Predicate, timeout: float = 30.0) -> Record:
        """The first matching record among all received so far, waiting for one if none."""
        return self.records[self._await(predicate, timeout, from_start=True)[-1]]

    def _await(self, predicate: Predicate, timeout: float, *, from_start: bool) -> range:
        """The indices from the cursor (or the first record) to the first match, inclusive."""
        deadline = time.monotonic() + timeout
        with self._changed:
            first = 0 if from_start else self._cursor
            position = first
            while True:
                while position < len(self.records):
                    position += 1
                    if predicate(self.records[position - 1]):
                        if not from_start:
                            self._cursor = position
                        return range(first, position)
                if self._ended:
                    raise PiRpcError(f"pi exited before the awaited record:\n{self.stderr()}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise PiRpcError(f"no awaited record within {timeout} s\n{self.recent()}")
                self._changed.wait(remaining)

    def recent(self, records: int = 25, stderr_chars: int = 4000) -> str:
        """What a failed wait reports: one line per recent record (its type and what names it),
        the last three whole, and the tail of Pi's stderr (where the shim logs its failures)."""
        with self._changed:
            tail = list(zip(self.arrived_ns[-records:], self.records[-records:], strict=True))
            last = self.records[-3:]
        start = self.started_ns
        lines = [f"{(at - start) / 1e6:9.1f} ms  {_summary(record)}" for at, record in tail]
        error = self.stderr()[-stderr_chars:]
        return (
            f"the last {len(tail)} of {len(self.records)} records:\n"
            + "\n".join(lines)
            + f"\nthe last three in full: {last}\nPi's stderr (tail):\n{error}"
        )

    def _stamped(self, span: range) -> list[Stamped]:
        with self._changed:
            return [(self.arrived_ns[index], self.records[index]) for index in span]

    # -- commands -------------------------------------------------------------------------------

    def send(self, command: Mapping[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command).encode() + b"\n")
        self.process.stdin.flush()

    def command_response(self, command: Mapping[str, Any], timeout: float = 30.0) -> Stamped:
        """Send one command with a fresh id; its successful response, stamped."""
        request_id = f"t{next(self._ids)}"
        self.send({**command, "id": request_id})
        span = self._await(
            lambda r: r.get("type") == "response" and r.get("id") == request_id,
            timeout,
            from_start=True,
        )
        arrived, response = self._stamped(span[-1:])[0]
        if not response.get("success"):
            raise PiRpcError(f"{command.get('type')} failed: {response}")
        return arrived, response

    def command(self, command: Mapping[str, Any], timeout: float = 30.0) -> Record:
        """Send one command with a fresh id and return its successful response's ``data``."""
        _, response = self.command_response(command, timeout)
        data: Record = response.get("data") or {}
        return data

    def prompt_stamped(self, message: str, timeout: float = 60.0) -> list[Stamped]:
        """Send ``prompt``; every record of the run up to ``agent_settled``, stamped."""
        self.skip()
        self.send({"type": "prompt", "message": message})
        return self._stamped(
            self._await(lambda r: r.get("type") == "agent_settled", timeout, from_start=False)
        )

    def prompt(self, message: str, timeout: float = 60.0) -> list[Record]:
        """Send ``prompt`` and return every record of the run up to ``agent_settled``."""
        return [record for _, record in self.prompt_stamped(message, timeout)]

    # -- ending ---------------------------------------------------------------------------------

    def close(self, timeout: float = 10.0) -> int:
        """Close stdin (Pi shuts down cleanly) and reap the process; SIGKILL after ``timeout``."""
        assert self.process.stdin is not None
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            if self._own_session:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
            else:
                self.process.kill()
            return self.process.wait()

    def kill(self) -> int:
        """SIGKILL: no shutdown handler runs."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGKILL)
        code = self.process.wait(timeout=10)
        with contextlib.suppress(OSError):
            assert self.process.stdin is not None
            self.process.stdin.close()
        return code


def _summary(record: Record, width: int = 100) -> str:
    """A record's type and what tells it apart: a UI request's method, a message's role and
    custom type with the start of its text, a response's command and outcome."""
    kind = str(record.get("type"))
    if kind == "extension_ui_request":
        detail = f"{record.get('method')} {record.get('message') or record.get('statusText') or ''}"
    elif kind in {"message_start", "message_end"} and isinstance(record.get("message"), dict):
        message = record["message"]
        detail = f"{message.get('role')} {message.get('customType') or ''} {message.get('content')}"
    elif kind == "response":
        outcome = record.get("error") or ""
        detail = f"{record.get('command')} success={record.get('success')} {outcome}"
    else:
        detail = ""
    return f"{kind} {detail}"[:width]
