"""Real Pi 0.80.10 in RPC mode for the benchmarks: launching it with or without pi-squad's
extension, a client that timestamps every record on arrival, and a benchmark-only policy for the
scripted model.

``bench-bash``: issues ``bench-calls: N`` trivial ``bash`` calls (``true``), ``bench-per-message:
K`` per assistant message (default 1), then a one-line report. Both markers go in the appended
system prompt, beside ``scripted-policy: bench-bash``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from adapters.pi_runtime import PiRuntime, pi_command, pi_environment
from adapters.scripted_model.conversation import Conversation
from adapters.scripted_model.policies import PlannedCall, PolicyState, Reply
from bench.common import REPO

EXTENSION = REPO / "entrypoints" / "pi"
BRIDGE_ARGV = (sys.executable, "-m", "entrypoints.bridge")
BENCH_POLICY = "bench-bash"
CALLS_MARKER = "bench-calls"
PER_MESSAGE_MARKER = "bench-per-message"

Record = dict[str, Any]
Stamped = tuple[int, Record]


def bench_bash(conversation: Conversation, state: PolicyState) -> Reply:
    total = int(conversation.marker(CALLS_MARKER) or "200")
    per_message = max(1, int(conversation.marker(PER_MESSAGE_MARKER) or "1"))
    made = sum(1 for _ in conversation.calls("bash"))
    if made >= total:
        return Reply(f"bench-bash: {made} calls made.")
    count = min(per_message, total - made)
    return Reply("", tuple(PlannedCall("bash", {"command": "true"}) for _ in range(count)))


BENCH_POLICIES = {BENCH_POLICY: bench_bash}


def pi_argv(
    runtime: PiRuntime,
    *,
    extension: bool,
    model: bool = False,
    append_prompt: Path | None = None,
) -> list[str]:
    argv = [*pi_command(runtime), "--mode", "rpc", "--no-session"]
    if model:
        argv += ["--provider", "fake", "--model", "fake-model"]
    argv.append("--no-extensions")
    if extension:
        argv += ["-e", str(EXTENSION)]
    if append_prompt is not None:
        argv += ["--append-system-prompt", str(append_prompt)]
    return argv


def pi_env(
    runtime: PiRuntime, agent_dir: Path, base: Mapping[str, str], extra: Mapping[str, str]
) -> dict[str, str]:
    env = pi_environment(base, agent_dir, runtime)
    env.update(extra)
    env["PI_SQUAD_BRIDGE"] = json.dumps(list(BRIDGE_ARGV))
    return env


class TimedPi:
    """One ``pi --mode rpc`` process; every stdout record is kept with its arrival time (ns)."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> None:
        self.started_ns = time.perf_counter_ns()
        self.process = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
        )
        assert self.process.stdout is not None
        assert self.process.stderr is not None
        self.records: list[Stamped] = []
        self._ended = False
        self._changed = threading.Condition()
        self._stderr = bytearray()
        self._ids = itertools.count(1)
        threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True).start()
        threading.Thread(target=self._drain, args=(self.process.stderr,), daemon=True).start()

    def _read(self, stream: IO[bytes]) -> None:
        buffer = b""
        while chunk := stream.read1(65536):  # type: ignore[attr-defined]
            arrived = time.perf_counter_ns()
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            decoded = [(arrived, json.loads(line)) for line in lines if line.strip()]
            with self._changed:
                self.records.extend(decoded)
                self._changed.notify_all()
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def _drain(self, stream: IO[bytes]) -> None:
        while chunk := stream.read1(4096):  # type: ignore[attr-defined]
            self._stderr.extend(chunk)

    def stderr(self) -> str:
        return self._stderr.decode("utf-8", "replace")[-4000:]

    def send(self, command: Mapping[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command).encode() + b"\n")
        self.process.stdin.flush()

    def wait_for(self, predicate: Callable[[Record], bool], *, start: int, timeout: float) -> int:
        """Index of the first record at or after ``start`` matching ``predicate``."""
        deadline = time.monotonic() + timeout
        position = start
        with self._changed:
            while True:
                while position < len(self.records):
                    if predicate(self.records[position][1]):
                        return position
                    position += 1
                if self._ended:
                    raise RuntimeError(f"pi exited early:\n{self.stderr()}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"pi did not answer within {timeout} s:\n{self.stderr()}")
                self._changed.wait(remaining)

    def command(self, command: Mapping[str, Any], timeout: float = 60.0) -> Stamped:
        request_id = f"b{next(self._ids)}"
        with self._changed:
            start = len(self.records)
        self.send({**command, "id": request_id})
        found = self.wait_for(
            lambda r: r.get("type") == "response" and r.get("id") == request_id,
            start=start,
            timeout=timeout,
        )
        stamped = self.records[found]
        if not stamped[1].get("success"):
            raise RuntimeError(f"{command.get('type')} failed: {stamped[1]}")
        return stamped

    def prompt(self, message: str, timeout: float = 600.0) -> list[Stamped]:
        with self._changed:
            start = len(self.records)
        self.send({"type": "prompt", "message": message})
        end = self.wait_for(
            lambda r: r.get("type") == "agent_settled", start=start, timeout=timeout
        )
        return self.records[start : end + 1]

    def close(self, timeout: float = 15.0) -> int:
        assert self.process.stdin is not None
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            return self.process.wait()
