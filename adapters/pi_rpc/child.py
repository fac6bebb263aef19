"""``PiRpcChild``: the ``ChildHandle`` of one running ``pi --mode rpc``, with its four threads
(stdout reader, stderr drain, waiter, dispatcher; see the package's docstring)."""

from __future__ import annotations

import contextlib
import json
import logging
import subprocess
import threading
from collections.abc import Callable, Mapping
from typing import IO, Any

import attrs

from adapters.isolation.confinement import remove_scratch
from adapters.pi_rpc.event_gate import EventGate, Sink
from adapters.pi_rpc.prompt_file import remove_prompt_file
from adapters.pi_rpc.record_events import RecordEvents
from adapters.pi_rpc.requests import PendingRequests, RequestFailed
from adapters.pi_rpc.stderr_tail import StderrTail
from adapters.pi_rpc.stdout_records import MAX_RECORD_BYTES, read_records
from adapters.pi_rpc.termination import terminate
from application.ports import ChildHandle, Exited, Settled

logger = logging.getLogger(__name__)


@attrs.frozen
class ChildSettings:
    """What the runtime fixes for every child it starts. Timeouts, in seconds:
    ``request_timeout`` for every answer after startup, ``settle_exit_grace`` between closing
    stdin after settlement and SIGTERM, ``kill_grace`` between SIGTERM and SIGKILL,
    ``stream_join_timeout`` for the output readers after the process was reaped (a grandchild
    may hold the pipes open). ``max_record_bytes``: a longer stdout record is skipped (logged),
    never buffered whole."""

    request_timeout: float = 10.0
    settle_exit_grace: float = 2.0
    kill_grace: float = 3.0
    stream_join_timeout: float = 2.0
    max_record_bytes: int = MAX_RECORD_BYTES


class PiRpcChild:
    """One running ``pi --mode rpc``: a ``ChildHandle``. Every method is thread-safe.

    Its events are queued from the start and reach ``sink`` only once the spawn has decided
    (``release``: delivered; ``abandon``: dropped)."""

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        *,
        task_id: str,
        child_id: str,
        sink: Sink,
        prompt_file: str,
        scratch_dir: str | None,
        settings: ChildSettings,
        observe_output: bool = False,
    ) -> None:
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        self._process = process
        self._stdin = process.stdin
        self._task_id = task_id
        self._child_id = child_id
        self._prompt_file = prompt_file
        self._scratch_dir = scratch_dir
        self._settings = settings
        self._observe_output = observe_output

        self._lock = threading.Lock()  # the settled and stopped flags
        self._stdin_lock = threading.Lock()
        self._requests = PendingRequests()
        self._stderr = StderrTail()
        self._gate = EventGate(sink, child_id)
        self._records = RecordEvents(
            task_id,
            child_id,
            emit=self._gate.put,
            requests=self._requests,
            settled=self._on_settled,
        )
        self._settled = False
        self._stopped_by_us = False  # kill() or abort()
        self._exit_code: int | None = None
        self._reaped = threading.Event()

        self._stdout_thread = self._thread("stdout", self._read_stdout, process.stdout)
        self._stderr_thread = self._thread("stderr", self._drain_stderr, process.stderr)
        self._dispatch_thread = self._thread("dispatch", self._gate.deliver)
        self._wait_thread = self._thread("wait", self._wait)

    def _thread(self, name: str, target: Callable[..., None], *args: Any) -> threading.Thread:
        thread = threading.Thread(
            target=target, args=args, name=f"pi-rpc-{name}-{self._child_id[:8]}", daemon=True
        )
        thread.start()
        return thread

    # -- ChildHandle ------------------------------------------------------------------------

    @property
    def child_id(self) -> str:
        return self._child_id

    @property
    def task_id(self) -> str:
        return self._task_id

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def exit_code(self) -> int | None:
        """The exit status once reaped (negative: killed by that signal), else ``None``."""
        return self._exit_code

    def alive(self) -> bool:
        return not self._reaped.is_set()

    def steer(self, message: str) -> bool:
        # Noted first: Pi may echo it into the session before its answer to the request.
        self._records.steering(message)
        accepted = self._accepted({"type": "steer", "message": message})
        if not accepted:
            self._records.steer_refused(message)
        return accepted

    def follow_up(self, message: str) -> bool:
        return self._accepted({"type": "follow_up", "message": message})

    def abort(self) -> None:
        """Send ``abort`` without waiting (Pi may answer after ``agent_settled``). The exit that
        follows is not unexpected."""
        with self._lock:
            self._stopped_by_us = True
        request_id = self._requests.new_id("abort")
        with contextlib.suppress(RequestFailed):
            self._write({"type": "abort", "id": request_id})

    def kill(self) -> None:
        """SIGTERM, SIGKILL after the grace period; returns once the process is reaped.

        Idempotent; the exit is reported as ``Exited(unexpected=False)``."""
        with self._lock:
            self._stopped_by_us = True
        self._terminate()

    def stderr_tail(self) -> str:
        """The last 64 KiB the child wrote to stderr (decoded, invalid UTF-8 replaced)."""
        return self._stderr.text()

    # -- requests ---------------------------------------------------------------------------

    def request(self, command: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        """Send ``command`` with a fresh id and wait for its response record (any ``success``).

        Raises ``RequestFailed`` on timeout, a write failure, or the process exiting first.
        """
        if self._reaped.is_set():
            raise RequestFailed("the child has exited")
        return self._requests.exchange(command, timeout, self._write)

    def _accepted(self, command: Mapping[str, Any]) -> bool:
        try:
            answer = self.request(command, self._settings.request_timeout)
        except RequestFailed as failure:
            logger.info("child %s: %s", self._child_id, failure)
            return False
        return answer.get("success") is True

    def _write(self, command: Mapping[str, Any]) -> None:
        line = json.dumps(command, ensure_ascii=True, separators=(",", ":")).encode() + b"\n"
        with self._stdin_lock:
            try:
                self._stdin.write(line)
                self._stdin.flush()
            except (OSError, ValueError) as error:  # broken pipe, closed stdin
                raise RequestFailed(f"cannot write to the child: {error}") from None

    # -- stdout -----------------------------------------------------------------------------

    def _read_stdout(self, stream: IO[bytes]) -> None:
        try:
            read_records(
                stream,
                self._records.read,
                child_id=self._child_id,
                max_record_bytes=self._settings.max_record_bytes,
                on_update=self._records.update if self._observe_output else None,
            )
        except (OSError, ValueError) as error:
            logger.warning("child %s: stdout read failed: %s", self._child_id, error)
        finally:
            self._requests.close("the child closed its output")

    def _on_settled(self, settled: Settled) -> None:
        with self._lock:
            first = not self._settled
            self._settled = True
        if not first:
            return
        self._gate.put(settled)
        self._thread("finish", self._finish_after_settlement)

    def _finish_after_settlement(self) -> None:
        self._close_stdin()
        if not self._reaped.wait(self._settings.settle_exit_grace):
            self._terminate()

    def _close_stdin(self) -> None:
        with self._stdin_lock, contextlib.suppress(OSError, ValueError):
            self._stdin.close()

    # -- stderr, exit -----------------------------------------------------------------------

    def _drain_stderr(self, stream: IO[bytes]) -> None:
        try:
            self._stderr.drain(stream)
        except (OSError, ValueError) as error:
            logger.warning("child %s: stderr read failed: %s", self._child_id, error)

    def _wait(self) -> None:
        code = self._process.wait()
        self._exit_code = code
        self._reaped.set()
        # Answers the child wrote before exiting are still in the pipe: read them first.
        self._stdout_thread.join(self._settings.stream_join_timeout)
        self._requests.close("the child exited")
        self._stderr_thread.join(self._settings.stream_join_timeout)
        self._close_stdin()
        remove_prompt_file(self._prompt_file)
        remove_scratch(self._scratch_dir)
        with self._lock:
            unexpected = not (self._settled or self._stopped_by_us)
        exited = Exited(
            task_id=self._task_id,
            child_id=self._child_id,
            exit_code=code,
            stderr_tail=self._stderr.text(),
            unexpected=unexpected,
        )
        if unexpected:
            logger.warning("child %s exited unexpectedly with status %s", self._child_id, code)
        self._gate.put_last(exited)

    # -- termination --------------------------------------------------------------------------

    def _terminate(self) -> None:
        terminate(self._process, self._reaped, self._settings.kill_grace, self._child_id)

    def release(self) -> None:
        """Called by the runtime once the spawn succeeded: deliver the events queued so far, then
        the rest."""
        self._gate.release()

    def finish_at_exit(self, grace: float) -> None:
        """This process is exiting (``exit_cleanup``): stdin closed, terminated unless it ends
        within ``grace`` seconds, and its waiter's cleanup (prompt file, scratch) awaited."""
        with self._lock:
            self._stopped_by_us = True
        self._close_stdin()
        if not self._reaped.wait(grace):
            self._terminate()
        self._wait_thread.join(self._settings.stream_join_timeout * 2 + 1)

    def abandon(self) -> None:
        """Called by the runtime once the spawn failed: drop every event, kill, reap, and wait
        until the prompt file is gone."""
        with self._lock:
            self._stopped_by_us = True
        self._gate.mute()
        self._terminate()
        self._wait_thread.join(self._settings.stream_join_timeout * 2 + 1)


_handle_conforms: type[ChildHandle] = PiRpcChild
