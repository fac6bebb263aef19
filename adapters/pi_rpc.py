"""``ChildRuntime`` over real child processes: one ``pi --mode rpc`` per task (contract §6, §12).

Command line (reference/pi-squad-upstream.md §5)::

    <prefix> --mode rpc <session> [-e <extension>] --append-system-prompt <file>
             [--provider P] [--model M] [--thinking T] [--tools a,b | --no-tools]

``<session>`` is ``--session-dir D`` (new), ``--session F`` (resume) or
``--fork F --session-dir D`` (fork). The appended system prompt goes to a private temporary
file (mode ``0600``) that is removed once the process has exited. ``cwd`` is the request's;
the environment is the runtime's base environment plus the request's variables, nothing else.

Protocol (reference/pi-runtime.md): stdout is read as bytes and split on ``\\n`` only (Pi writes
U+2028/U+2029 raw inside strings); each record goes through the project's strict JSON decoder,
and a malformed record is logged (never its content) and skipped. Startup sends ``get_state``
(its answer binds the session: ``SessionBound``), then ``prompt`` with the first prompt, which
must be accepted. Settlement is ``agent_settled``, never ``agent_end``: the runtime then closes
the child's stdin (Pi exits cleanly, letting extensions see ``session_shutdown``) and, if the
child is still there after a grace period, terminates it (SIGTERM, then SIGKILL).

Threads and the sink. Each child has four daemon threads: a stdout reader, a stderr drain
(keeping the last 64 KiB for ``Exited.stderr_tail``), a waiter that reaps the process, and a
dispatcher, the only thread that calls the sink for that child. So for one child the sink is
called from one thread at a time, in the order the child produced the events, starting once
``spawn`` has returned (``SessionBound`` first) and ending with ``Exited``, exactly once;
different children call it concurrently, so the sink must be thread-safe. The
sink may call the handle's methods (``steer`` included: the reader keeps reading while the
dispatcher is busy). An exception raised by the sink is logged and the next event is delivered.

Every event carries the ``child_id`` of the handle that produced it; a scheduler that replaced
or killed a handle recognises its late events by that id.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import signal
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any, Final

import attrs

from adapters.child_confinement import confined_launch, remove_scratch
from adapters.pi_rpc_records import (
    assistant_text,
    error_text,
    requested_calls,
    session_from_state,
    text_of,
    tool_result,
)
from application.ports import (
    ChildEvent,
    ChildHandle,
    ChildIsolation,
    ChildRuntime,
    Exited,
    ForkSession,
    IsolationSupport,
    NewSession,
    ResumeSession,
    SessionBound,
    Settled,
    SpawnRequest,
    ToolCallsRequested,
    ToolStarted,
)
from domain.errors import IsolationUnavailable
from domain.strict_json import JsonDecodeFailure, decode_json

logger = logging.getLogger(__name__)

STDERR_TAIL_BYTES: Final = 64 * 1024
MAX_RECORD_BYTES: Final = 64 * 1024 * 1024
_READ_SIZE: Final = 65536
# Pi serialises ``type`` first; these records repeat the whole partial message each time, so
# they are recognised by their prefix and never decoded (a record with another key order is
# simply decoded and then ignored).
_MESSAGE_UPDATE_PREFIX: Final = b'{"type":"message_update"'

Sink = Callable[[ChildEvent], None]


class SpawnFailed(Exception):
    """The child could not be started, did not bind its session, or refused the first prompt.

    The process (if any) has been killed and reaped and the prompt file removed when this is
    raised, and the sink never hears of that child. ``reason`` never contains spec or prompt
    content.
    """

    def __init__(
        self,
        task_id: str,
        child_id: str,
        reason: str,
        *,
        stderr_tail: str = "",
        exit_code: int | None = None,
    ) -> None:
        super().__init__(f"task {task_id}: child {child_id} failed to start: {reason}")
        self.task_id = task_id
        self.child_id = child_id
        self.reason = reason
        self.stderr_tail = stderr_tail
        self.exit_code = exit_code


class _RequestFailed(Exception):
    """Internal: an RPC request got no acceptable answer."""


def session_arguments(request: SpawnRequest) -> list[str]:
    session = request.session
    if isinstance(session, NewSession):
        return ["--session-dir", session.session_dir]
    if isinstance(session, ResumeSession):
        return ["--session", session.session_file]
    if isinstance(session, ForkSession):
        return ["--fork", session.source_file, "--session-dir", session.session_dir]
    raise TypeError(f"unknown session choice {type(session).__name__}")


def child_argv(
    prefix: Sequence[str],
    request: SpawnRequest,
    *,
    prompt_file: str,
    extension: str | None,
    provider: str | None,
) -> list[str]:
    """The full command line for one child. ``request.provider`` wins over ``provider``.

    ``tools=None`` passes no tool flag (Pi's defaults); an empty tuple passes ``--no-tools``.
    """
    argv = [*prefix, "--mode", "rpc", *session_arguments(request)]
    if extension is not None:
        argv += ["-e", extension]
    argv += ["--append-system-prompt", prompt_file]
    chosen_provider = request.provider if request.provider is not None else provider
    if chosen_provider is not None:
        argv += ["--provider", chosen_provider]
    if request.model is not None:
        argv += ["--model", request.model]
    if request.thinking is not None:
        argv += ["--thinking", request.thinking]
    if request.tools is not None:
        argv += ["--tools", ",".join(request.tools)] if request.tools else ["--no-tools"]
    return argv


class PiRpcRuntime:
    """Starts children. Explicitly a ``ChildRuntime`` (see ``spawn``); it holds no clock.

    ``prefix``: the argv that starts Pi (``adapters.pi_runtime.pi_command``).
    ``base_env``: the complete environment for children before the request's variables (use
    ``adapters.pi_runtime.pi_environment`` so Pi's state stays out of ``~/.pi``).
    ``extension``: the ``entrypoints/pi`` package path passed with ``-e``; ``None`` for none.
    ``provider``: ``--provider`` unless the request names one.
    Timeouts, in seconds: ``startup_timeout`` for the ``get_state`` answer, ``request_timeout``
    for every other answer, ``settle_exit_grace`` between closing stdin after settlement and
    SIGTERM, ``kill_grace`` between SIGTERM and SIGKILL, ``stream_join_timeout`` for the output
    readers after the process was reaped (a grandchild may hold the pipes open).
    ``max_record_bytes``: a longer stdout record is skipped (logged), never buffered whole.
    """

    def __init__(
        self,
        prefix: Sequence[str],
        base_env: Mapping[str, str],
        extension: str | None,
        *,
        provider: str | None = None,
        startup_timeout: float = 30.0,
        request_timeout: float = 10.0,
        settle_exit_grace: float = 2.0,
        kill_grace: float = 3.0,
        stream_join_timeout: float = 2.0,
        max_record_bytes: int = MAX_RECORD_BYTES,
        temp_dir: str | None = None,
        new_child_id: Callable[[], str] = lambda: uuid.uuid4().hex,
        isolation: ChildIsolation | None = None,
    ) -> None:
        if not prefix:
            raise ValueError("the pi command prefix is empty")
        self._prefix = tuple(prefix)
        self._base_env = dict(base_env)
        self._extension = extension
        self._provider = provider
        self._startup_timeout = startup_timeout
        self._request_timeout = request_timeout
        self._settle_exit_grace = settle_exit_grace
        self._kill_grace = kill_grace
        self._stream_join_timeout = stream_join_timeout
        self._max_record_bytes = max_record_bytes
        self._temp_dir = temp_dir
        self._new_child_id = new_child_id
        self._isolation = isolation

    @property
    def isolation(self) -> IsolationSupport:
        """What this runtime can enforce on the children it starts."""
        if self._isolation is None:
            return IsolationSupport(mode="none", abi=None, reason="no isolation configured")
        return self._isolation.support()

    def spawn(self, request: SpawnRequest, sink: Sink) -> PiRpcChild:
        """Start the child, bind its session, send ``first_prompt``; raise ``SpawnFailed``.

        Blocks until the first prompt was accepted (Pi needs about a second to start). Events
        are queued meanwhile and delivered, ``SessionBound`` first, only once this returns; a
        failed start delivers none.
        """
        child_id = self._new_child_id()
        try:
            prompt_file = self._write_prompt(request.system_prompt)
        except (OSError, UnicodeEncodeError) as error:
            raise SpawnFailed(
                request.task_id, child_id, f"cannot write the system prompt file: {error}"
            ) from None
        argv = child_argv(
            self._prefix,
            request,
            prompt_file=prompt_file,
            extension=self._extension,
            provider=self._provider,
        )
        env = {**self._base_env, **request.environment}
        scratch: str | None = None
        if request.confinement is not None:
            if self._isolation is None:
                _remove(prompt_file)
                raise IsolationUnavailable("this runtime was built without child isolation")
            try:
                launch = confined_launch(
                    self._isolation, argv, env, request.confinement, temp_parent=self._temp_dir
                )
            except BaseException:
                _remove(prompt_file)
                raise
            argv, env, scratch = launch.argv, launch.env, launch.scratch_dir
        try:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=request.cwd,
                env=env,
                start_new_session=os.name == "posix",
            )
        except OSError as error:
            _remove(prompt_file)
            remove_scratch(scratch)
            raise SpawnFailed(
                request.task_id, child_id, f"cannot start {argv[0]}: {error}"
            ) from None
        child = PiRpcChild(
            process,
            task_id=request.task_id,
            child_id=child_id,
            sink=sink,
            prompt_file=prompt_file,
            scratch_dir=scratch,
            request_timeout=self._request_timeout,
            settle_exit_grace=self._settle_exit_grace,
            kill_grace=self._kill_grace,
            stream_join_timeout=self._stream_join_timeout,
            max_record_bytes=self._max_record_bytes,
        )
        try:
            state = child._request({"type": "get_state"}, self._startup_timeout)
            if session_from_state(state) is None:
                raise _RequestFailed("get_state answered without a session file")
            answer = child._request(
                {"type": "prompt", "message": request.first_prompt}, self._request_timeout
            )
            if answer.get("success") is not True:
                raise _RequestFailed(f"the first prompt was refused: {error_text(answer)}")
        except _RequestFailed as failure:
            child._abandon()
            raise SpawnFailed(
                request.task_id,
                child_id,
                str(failure),
                stderr_tail=child.stderr_tail(),
                exit_code=child.exit_code,
            ) from None
        child._release()
        return child

    def _write_prompt(self, text: str) -> str:
        data = text.encode("utf-8")
        descriptor, path = tempfile.mkstemp(
            prefix="pi-squad-", suffix="-prompt.md", dir=self._temp_dir
        )
        try:
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(data)
        except BaseException:
            _remove(path)
            raise
        return path


@attrs.define
class _Pending:
    done: threading.Event = attrs.field(factory=threading.Event)
    response: dict[str, Any] | None = None
    error: str = ""


class PiRpcChild:
    """One running ``pi --mode rpc``: a ``ChildHandle``. Every method is thread-safe."""

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        *,
        task_id: str,
        child_id: str,
        sink: Sink,
        prompt_file: str,
        scratch_dir: str | None = None,
        request_timeout: float,
        settle_exit_grace: float,
        kill_grace: float,
        stream_join_timeout: float,
        max_record_bytes: int,
    ) -> None:
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        self._process = process
        self._stdin = process.stdin
        self._task_id = task_id
        self._child_id = child_id
        self._sink = sink
        self._prompt_file = prompt_file
        self._scratch_dir = scratch_dir
        self._request_timeout = request_timeout
        self._settle_exit_grace = settle_exit_grace
        self._kill_grace = kill_grace
        self._stream_join_timeout = stream_join_timeout
        self._max_record_bytes = max_record_bytes

        self._lock = threading.Lock()  # pending requests, flags
        self._stdin_lock = threading.Lock()
        self._pending: dict[str, _Pending] = {}
        self._next_request = 0
        self._stdout_closed = False
        self._bound = False
        self._settled = False
        self._stopped_by_us = False  # kill() or abort()
        self._muted = False  # spawn failed: nothing more reaches the sink
        self._finished = False  # Exited queued: nothing more reaches the sink
        self._turns = 0
        self._tool_calls = 0
        self._stderr_tail = bytearray()
        self._exit_code: int | None = None
        self._reaped = threading.Event()
        self._released = threading.Event()  # set when spawn has decided: deliver or drop
        self._events: queue.Queue[ChildEvent | None] = queue.Queue()  # None: no more

        self._stdout_thread = self._thread("stdout", self._read_stdout, process.stdout)
        self._stderr_thread = self._thread("stderr", self._drain_stderr, process.stderr)
        self._dispatch_thread = self._thread("dispatch", self._dispatch)
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
        return self._accepted({"type": "steer", "message": message})

    def follow_up(self, message: str) -> bool:
        return self._accepted({"type": "follow_up", "message": message})

    def abort(self) -> None:
        """Send ``abort`` without waiting (Pi may answer after ``agent_settled``). The exit that
        follows is not unexpected."""
        with self._lock:
            self._stopped_by_us = True
            self._next_request += 1
            request_id = f"abort-{self._next_request}"
        with contextlib.suppress(_RequestFailed):
            self._write({"type": "abort", "id": request_id})

    def kill(self) -> None:
        """SIGTERM, SIGKILL after the grace period; returns once the process is reaped.

        Idempotent; the exit is reported as ``Exited(unexpected=False)``."""
        with self._lock:
            self._stopped_by_us = True
        self._terminate()

    # -- requests ---------------------------------------------------------------------------

    def _request(self, command: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        """Send ``command`` with a fresh id and wait for its response record (any ``success``).

        Raises ``_RequestFailed`` on timeout, a write failure, or the process exiting first.
        """
        with self._lock:
            if self._stdout_closed or self._reaped.is_set():
                raise _RequestFailed("the child has exited")
            self._next_request += 1
            request_id = f"req-{self._next_request}"
            slot = _Pending()
            self._pending[request_id] = slot
        try:
            self._write({**command, "id": request_id})
            if not slot.done.wait(timeout):
                raise _RequestFailed(f"no answer to {command.get('type')} within {timeout:g} s")
            if slot.response is None:
                raise _RequestFailed(f"no answer to {command.get('type')}: {slot.error}")
            return slot.response
        finally:
            with self._lock:
                self._pending.pop(request_id, None)

    def _accepted(self, command: Mapping[str, Any]) -> bool:
        try:
            answer = self._request(command, self._request_timeout)
        except _RequestFailed as failure:
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
                raise _RequestFailed(f"cannot write to the child: {error}") from None

    def _fail_pending(self, reason: str) -> None:
        with self._lock:
            slots = list(self._pending.values())
        for slot in slots:
            if not slot.done.is_set():
                slot.error = reason
                slot.done.set()

    # -- stdout -----------------------------------------------------------------------------

    def _read_stdout(self, stream: IO[bytes]) -> None:
        read = getattr(stream, "read1", stream.read)
        pieces: list[bytes] = []
        size = 0
        discarding = False
        try:
            while chunk := read(_READ_SIZE):
                start = 0
                while (end := chunk.find(b"\n", start)) >= 0:
                    if discarding:
                        discarding = False
                    else:
                        pieces.append(chunk[start:end])
                        self._record(b"".join(pieces))
                    pieces, size = [], 0
                    start = end + 1
                if start < len(chunk) and not discarding:
                    pieces.append(chunk[start:])
                    size += len(chunk) - start
                    if size > self._max_record_bytes:
                        logger.warning(
                            "child %s: skipped a stdout record over %d bytes",
                            self._child_id,
                            self._max_record_bytes,
                        )
                        pieces, size, discarding = [], 0, True
            if pieces and not discarding:
                self._record(b"".join(pieces))
        except (OSError, ValueError) as error:
            logger.warning("child %s: stdout read failed: %s", self._child_id, error)
        finally:
            with self._lock:
                self._stdout_closed = True
            self._fail_pending("the child closed its output")

    def _record(self, line: bytes) -> None:
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line.strip() or line.startswith(_MESSAGE_UPDATE_PREFIX):
            return
        try:
            record = decode_json(line)
        except JsonDecodeFailure as failure:
            logger.warning(
                "child %s: skipped a malformed stdout record (%d bytes): %s",
                self._child_id,
                len(line),
                failure.reason,
            )
            return
        if not isinstance(record, dict):
            logger.warning(
                "child %s: skipped a stdout record that is not an object", self._child_id
            )
            return
        try:
            self._handle(record)
        except Exception:  # a record of an unexpected shape must not stop the reader
            logger.exception(
                "child %s: could not interpret a %r record", self._child_id, record.get("type")
            )

    def _handle(self, record: dict[str, Any]) -> None:
        kind = record.get("type")
        if kind == "response":
            self._on_response(record)
        elif kind == "turn_end":
            self._turns += 1
        elif kind == "message_end":
            message = record.get("message")
            if isinstance(message, dict) and message.get("role") == "assistant":
                self._emit(assistant_text(self._task_id, self._child_id, message))
                calls = requested_calls(message)
                if calls:
                    self._emit(ToolCallsRequested(self._task_id, self._child_id, calls))
            elif isinstance(message, dict) and message.get("role") == "toolResult":
                self._emit(tool_result(self._task_id, self._child_id, message))
        elif kind == "tool_execution_start":
            self._tool_calls += 1
            self._emit(
                ToolStarted(
                    task_id=self._task_id,
                    child_id=self._child_id,
                    tool_name=text_of(record.get("toolName")),
                    tool_call_id=text_of(record.get("toolCallId")),
                )
            )
        elif kind == "agent_settled":
            self._on_settled()
        elif kind == "extension_error":
            logger.warning(
                "child %s: extension error in %s: %.300s",
                self._child_id,
                record.get("event"),
                record.get("error"),
            )

    def _on_response(self, record: dict[str, Any]) -> None:
        if record.get("command") == "get_state" and record.get("success") is True:
            session = session_from_state(record)
            if session is not None and not self._bound:
                self._bound = True
                self._emit(
                    SessionBound(
                        task_id=self._task_id,
                        child_id=self._child_id,
                        session_file=session[0],
                        session_id=session[1],
                    )
                )
        request_id = record.get("id")
        with self._lock:
            slot = self._pending.get(request_id) if isinstance(request_id, str) else None
        if slot is None:
            return
        slot.response = record
        slot.done.set()

    def _on_settled(self) -> None:
        with self._lock:
            first = not self._settled
            self._settled = True
        if not first:
            return
        self._emit(
            Settled(
                task_id=self._task_id,
                child_id=self._child_id,
                turn_count=self._turns,
                tool_call_count=self._tool_calls,
            )
        )
        self._thread("finish", self._finish_after_settlement)

    def _finish_after_settlement(self) -> None:
        with self._stdin_lock, contextlib.suppress(OSError, ValueError):
            self._stdin.close()
        if not self._reaped.wait(self._settle_exit_grace):
            self._terminate()

    # -- stderr, exit, dispatch ---------------------------------------------------------------

    def _drain_stderr(self, stream: IO[bytes]) -> None:
        read = getattr(stream, "read1", stream.read)
        try:
            while chunk := read(_READ_SIZE):
                with self._lock:
                    self._stderr_tail += chunk
                    excess = len(self._stderr_tail) - STDERR_TAIL_BYTES
                    if excess > 0:
                        del self._stderr_tail[:excess]
        except (OSError, ValueError) as error:
            logger.warning("child %s: stderr read failed: %s", self._child_id, error)

    def stderr_tail(self) -> str:
        """The last 64 KiB the child wrote to stderr (decoded, invalid UTF-8 replaced)."""
        with self._lock:
            data = bytes(self._stderr_tail)
        return data.decode("utf-8", "replace")

    def _wait(self) -> None:
        code = self._process.wait()
        self._exit_code = code
        self._reaped.set()
        # Answers the child wrote before exiting are still in the pipe: read them first.
        self._stdout_thread.join(self._stream_join_timeout)
        self._fail_pending("the child exited")
        self._stderr_thread.join(self._stream_join_timeout)
        with self._stdin_lock, contextlib.suppress(OSError, ValueError):
            self._stdin.close()
        _remove(self._prompt_file)
        remove_scratch(self._scratch_dir)
        with self._lock:
            unexpected = not (self._settled or self._stopped_by_us)
            exited = Exited(
                task_id=self._task_id,
                child_id=self._child_id,
                exit_code=code,
                stderr_tail=bytes(self._stderr_tail).decode("utf-8", "replace"),
                unexpected=unexpected,
            )
        if unexpected:
            logger.warning("child %s exited unexpectedly with status %s", self._child_id, code)
        with self._lock:
            self._events.put(exited)
            self._events.put(None)
            self._finished = True

    def _emit(self, event: ChildEvent) -> None:
        with self._lock:
            if not self._finished:
                self._events.put(event)

    def _dispatch(self) -> None:
        self._released.wait()
        while (event := self._events.get()) is not None:
            with self._lock:
                muted = self._muted
            if muted:
                continue
            try:
                self._sink(event)
            except Exception:
                logger.exception("child %s: the event sink raised", self._child_id)

    # -- termination --------------------------------------------------------------------------

    def _terminate(self) -> None:
        if self._reaped.is_set():
            return
        self._signal(signal.SIGTERM)
        if self._reaped.wait(self._kill_grace):
            return
        logger.warning("child %s ignored SIGTERM; sending SIGKILL", self._child_id)
        self._signal(getattr(signal, "SIGKILL", signal.SIGTERM))
        self._reaped.wait()

    def _signal(self, number: int) -> None:
        """Signal the child's process group (it leads its own session) or, failing that, it."""
        if self._reaped.is_set():
            return
        killpg = getattr(os, "killpg", None)
        if killpg is not None:
            try:
                killpg(self._process.pid, number)
            except ProcessLookupError:
                return
            except OSError:
                pass
            else:
                return
        with contextlib.suppress(OSError):
            self._process.send_signal(number)

    def _release(self) -> None:
        """Spawn succeeded: start delivering the events queued so far, then the rest."""
        self._released.set()

    def _abandon(self) -> None:
        """Spawn failed: drop every event, kill, reap, and wait until the prompt file is gone."""
        with self._lock:
            self._muted = True
            self._stopped_by_us = True
        self._released.set()
        self._terminate()
        self._wait_thread.join(self._stream_join_timeout * 2 + 1)


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


_runtime_conforms: type[ChildRuntime] = PiRpcRuntime
_handle_conforms: type[ChildHandle] = PiRpcChild
