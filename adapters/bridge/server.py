"""The bridge process's loop: requests from the shim on stdin, responses and events on stdout.

Requests are served concurrently (Pi runs sibling tool executions at once) by up to
``workers`` threads in turn: the thread holding the input reads one line, passes the input on
to an idle thread (starting one if none is idle and the limit allows) and serves that line
itself. A request is thus answered by the thread that read it, without a hand-over to another
thread on its way (one wake-up less per request than a reader feeding a pool), while the next
line is already being awaited. A role may name methods it serves *inline*: short ones that
never wait on another process (a spec child's chunk read), answered by the thread holding the
input before it reads on, without waking another. Responses are written whole under one lock,
in completion order, matched to requests by id.
Input is read as bytes and split on ``\\n`` only. A bad line never stops the bridge: it gets an
error response when it carries an id and is logged to stderr otherwise. End of input is a clean
exit after the requests in flight have been answered.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import IO, Any

import attrs

from adapters.bridge import protocol
from adapters.bridge.protocol import (
    AnswerableError,
    MalformedLine,
    ProtocolError,
    Request,
    RequestId,
)
from adapters.bridge.roles import BridgeRole, Notification
from application.ports import SessionChange, SessionControl, ToolFailure, ToolResult

DEFAULT_WORKERS = 8
_SKIP_CHUNK = 64 * 1024

Handler = Callable[[Mapping[str, Any]], object]


@attrs.define(eq=False)
class BridgeServer:
    _role: BridgeRole
    _stdin: IO[bytes] = attrs.field(kw_only=True)
    _stdout: IO[bytes] = attrs.field(kw_only=True)
    _log_stream: IO[str] = attrs.field(kw_only=True, alias="log")
    _workers: int = attrs.field(kw_only=True, default=DEFAULT_WORKERS)
    _max_line_bytes: int = attrs.field(kw_only=True, default=protocol.MAX_LINE_BYTES)
    _write_lock: threading.Lock = attrs.field(init=False, factory=threading.Lock)
    _log_lock: threading.Lock = attrs.field(init=False, factory=threading.Lock)
    _state_lock: threading.Lock = attrs.field(init=False, factory=threading.Lock)
    _output_closed: bool = attrs.field(init=False, default=False)
    _attached: bool = attrs.field(init=False, default=False)
    _detached: bool = attrs.field(init=False, default=False)
    _handlers: dict[str, Handler] = attrs.field(init=False)
    # Serving threads: the input is read by one at a time (``_input_lock``); ``_idle`` counts
    # those waiting for their turn to read, ``_threads`` every one started.
    _input_lock: threading.Lock = attrs.field(init=False, factory=threading.Lock)
    _threads_lock: threading.Lock = attrs.field(init=False, factory=threading.Lock)
    _threads: list[threading.Thread] = attrs.field(init=False, factory=list)
    _idle: int = attrs.field(init=False, default=0)
    _failure: BaseException | None = attrs.field(init=False, default=None)

    @_handlers.default
    def _method_handlers(self) -> dict[str, Handler]:
        return {
            protocol.Method.HELLO: self._hello,
            protocol.Method.SESSION_START: self._session_start,
            protocol.Method.BEFORE_AGENT_START: self._before_agent_start,
            protocol.Method.TOOL_CALL: self._tool_call,
            protocol.Method.EXECUTE_TOOL: self._execute_tool,
            protocol.Method.MESSAGE_END: self._message_end,
            protocol.Method.CONTEXT: self._context,
            protocol.Method.COMMAND: self._command,
            protocol.Method.CANCEL_TOOL: self._cancel_tool,
            protocol.Method.UI_ANSWER: self._ui_answer,
            protocol.Method.NAVIGATION: self._navigation,
            protocol.Method.SESSION_SHUTDOWN: self._session_shutdown,
        }

    @property
    def role(self) -> BridgeRole:
        return self._role

    def serve(self) -> int:
        """Serve until end of input; returns the process exit status (0) once every request
        read has been answered."""
        lines = self._lines()
        try:
            self._start_thread(lines)
            joined = 0
            while True:
                with self._threads_lock:
                    if joined == len(self._threads):
                        break
                    thread = self._threads[joined]
                thread.join()
                joined += 1
        finally:
            self._detach()
        if self._failure is not None:
            raise self._failure
        return 0

    def _start_thread(self, lines: Iterator[bytes]) -> None:
        """Call with ``_threads_lock`` held, or before any thread runs."""
        thread = threading.Thread(
            target=self._take_turns,
            args=(lines,),
            name=f"pi-squad-bridge-{len(self._threads)}",
            daemon=True,
        )
        self._threads.append(thread)
        self._idle += 1
        thread.start()

    def _take_turns(self, lines: Iterator[bytes]) -> None:
        try:
            while True:
                with self._input_lock:
                    work = self._take_request(lines)
                    with self._threads_lock:
                        self._idle -= 1
                        if (
                            work is not None
                            and self._idle == 0
                            and len(self._threads) < self._workers
                        ):
                            # Someone must await the next line while this one is served.
                            self._start_thread(lines)
                if work is None:
                    return  # end of input: every other thread finds it too
                self._serve(*work)
                with self._threads_lock:
                    self._idle += 1
        except BaseException as exc:  # pragma: no cover - _serve answers every failure itself
            self._failure = exc
            self.log(f"a serving thread failed:\n{_format_exc()}")

    def _take_request(self, lines: Iterator[bytes]) -> tuple[Request, Handler] | None:
        """The next request to serve once the input is handed on; ``None`` at end of input.

        Called holding the input. A line that is not a servable request is answered or logged
        here; a request of one of the role's ``inline`` methods is served here too, the input
        still held: its answer then costs no wake-up of another thread (and no hand-over of
        the interpreter lock), about a tenth of a spec child's chunk read. Only methods that
        are short and never wait on another process may be inline (``BridgeRole.inline``):
        a line arriving meanwhile waits for that one answer.
        """
        for line in lines:
            work = self._accept(line)
            if work is None:
                continue
            if work[0].method not in self._role.inline:
                return work
            self._serve(*work)
        return None

    # -- input ----------------------------------------------------------------------------------

    def _lines(self) -> Iterator[bytes]:
        limit = self._max_line_bytes
        while True:
            line = self._stdin.readline(limit + 1)
            if not line:
                return
            if line.endswith(b"\n"):
                line = line[:-1]
            elif len(line) > limit:
                self.log(f"discarded an input line longer than {limit} bytes")
                self._skip_rest_of_line()
                continue
            if line.endswith(b"\r"):
                line = line[:-1]
            if line.strip():
                yield line

    def _skip_rest_of_line(self) -> None:
        while True:
            rest = self._stdin.readline(_SKIP_CHUNK)
            if not rest or rest.endswith(b"\n"):
                return

    def _accept(self, line: bytes) -> tuple[Request, Handler] | None:
        """The request ``line`` makes and its handler; ``None`` for a line that makes none
        (answered here when it carries an id, logged otherwise)."""
        try:
            request = protocol.parse_request(line)
        except MalformedLine as exc:
            self.log(f"ignored a malformed input line ({exc}): {_preview(line)}")
            return None
        except AnswerableError as exc:
            self._send_error(exc.request_id, exc.error.code, exc.error.message)
            return None
        handler = self._handlers.get(request.method)
        if handler is None:
            self._send_error(
                request.id,
                protocol.ResponseErrorCode.UNKNOWN_METHOD,
                f"unknown method {request.method!r}; known: {', '.join(protocol.Method)}",
            )
            return None
        return request, handler

    def _serve(self, request: Request, handler: Handler) -> None:
        try:
            result = handler(request.params)
        except ProtocolError as exc:
            self._send_error(request.id, exc.code, exc.message)
        except ToolFailure as exc:
            self._send_error(request.id, protocol.ResponseErrorCode.TOOL_FAILED, exc.message)
        except Exception as exc:
            self.log(f"{request.method} #{request.id} failed:\n{_format_exc()}")
            self._send_error(
                request.id,
                protocol.ResponseErrorCode.INTERNAL,
                f"{request.method} failed: {protocol.failure_name(exc)}",
            )
        else:
            if isinstance(result, ToolResult):
                self._write(protocol.tool_result_line(request.id, result))
            else:
                self._send(protocol.ok_response(request.id, result))

    # -- output ---------------------------------------------------------------------------------

    def _send_error(self, request_id: RequestId, code: str, message: str) -> None:
        self._send(protocol.error_response(request_id, code, message))

    def _send(self, message: Mapping[str, Any]) -> None:
        self._write(protocol.encode_line(message))

    def _write(self, data: bytes) -> None:
        with self._write_lock:
            if self._output_closed:
                return
            try:
                self._stdout.write(data)
                self._stdout.flush()
            except (OSError, ValueError) as exc:  # the shim is gone (EPIPE) or closed stdout
                self._output_closed = True
                self.log(f"output closed: {exc}")

    def emit(self, notification: Notification) -> None:
        """Send one unsolicited event to the shim (thread-safe)."""
        self._send(protocol.event_message(notification.event, notification.data))

    def log(self, message: str) -> None:
        with self._log_lock, contextlib.suppress(OSError, ValueError):
            self._log_stream.write(f"pi-squad bridge: {message}\n")
            self._log_stream.flush()

    # -- notifications --------------------------------------------------------------------------

    def _attach_once(self) -> None:
        source = self._role.notifications
        with self._state_lock:
            if source is None or self._attached or self._detached:
                return
            self._attached = True
        source.attach(self.emit)

    def _detach(self) -> None:
        source = self._role.notifications
        with self._state_lock:
            attached = self._attached and not self._detached
            self._detached = True
        if source is not None and attached:
            try:
                source.detach()
            except Exception:
                self.log(f"detaching notifications failed:\n{_format_exc()}")

    # -- methods --------------------------------------------------------------------------------

    def _hello(self, params: Mapping[str, Any]) -> object:
        registrations = self._role.events.registrations()
        return {
            "role": self._role.name,
            "protocol": protocol.PROTOCOL_VERSION,
            "registrations": protocol.registrations_payload(
                registrations, lifecycle=self._role.lifecycle
            ),
        }

    def _session_start(self, params: Mapping[str, Any]) -> object:
        identity = protocol.session_identity(params)
        if self._role.control is not None:
            # Pi's ``ctx.hasUI``: whether a person can be asked in this session (absent: no).
            self._role.control.session_ui(params.get("hasUI") is True)
        if self._role.identify is not None:
            self._role.identify(identity)
        self._role.events.session_start()
        self._attach_once()
        return None

    def _before_agent_start(self, params: Mapping[str, Any]) -> object:
        return {"append": self._role.events.before_agent_start()}

    def _tool_call(self, params: Mapping[str, Any]) -> object:
        decision = self._role.events.tool_call(*protocol.tool_request(params, "input"))
        return protocol.decision_payload(decision)

    def _execute_tool(self, params: Mapping[str, Any]) -> object:
        self._hear_session_models(params)
        # Answered by ``protocol.tool_result_line`` (see ``_serve``).
        return self._role.events.execute_tool(*protocol.tool_request(params, "params"))

    def _hear_session_models(self, params: Mapping[str, Any]) -> None:
        if "sessionModels" in params and self._role.control is not None:
            # Imported on first use: a child's bridge is never sent models, nor loads them.
            from adapters.bridge.session_models import tell  # noqa: PLC0415

            tell(self._role.control, params, self.log)

    def _message_end(self, params: Mapping[str, Any]) -> object:
        self._role.events.message_end(protocol.require_object(params, "message"))
        return None

    def _context(self, params: Mapping[str, Any]) -> object:
        self._role.events.context()
        return None

    def _command(self, params: Mapping[str, Any]) -> object:
        commands = self._role.commands
        if commands is None:
            raise ProtocolError(
                protocol.ResponseErrorCode.UNKNOWN_METHOD,
                f"the {self._role.name} role registers no commands",
            )
        args = params.get("args", "")
        if not isinstance(args, str):
            raise ProtocolError(
                protocol.ResponseErrorCode.INVALID_PARAMS, "params.args must be a string"
            )
        self._hear_session_models(params)
        answer = commands.command(protocol.require_str(params, "name"), args)
        return protocol.command_answer_payload(answer)

    def _control(self) -> SessionControl:
        control = self._role.control
        if control is None:
            raise ProtocolError(
                protocol.ResponseErrorCode.UNKNOWN_METHOD,
                f"the {self._role.name} role runs no cancellable tools",
            )
        return control

    def _cancel_tool(self, params: Mapping[str, Any]) -> object:
        self._control().cancel_tool(protocol.require_str(params, "toolCallId"))
        return None

    def _ui_answer(self, params: Mapping[str, Any]) -> object:
        control = self._control()
        control.ui_answer(
            protocol.require_str(params, "requestId"), protocol.require_bool(params, "confirmed")
        )
        return None

    def _navigation(self, params: Mapping[str, Any]) -> object:
        try:
            change = protocol.session_change(params)
        except ProtocolError:
            # A malformed reason or position is dropped, never a reason to skip navigating
            # (as for ``session_shutdown``); without an event name there is nothing to judge.
            change = SessionChange(event=protocol.require_str(params, "event"))
        if self._role.on_session_change is not None:
            self._role.on_session_change(change)
        return None

    def _session_shutdown(self, params: Mapping[str, Any]) -> object:
        try:
            # Navigation first (leases revoked, workers killed), then the role's own shutdown,
            # which runs even when that fails.
            if self._role.on_session_change is not None:
                self._role.on_session_change(_shutdown_change(params))
        finally:
            try:
                if self._role.on_shutdown is not None:
                    self._role.on_shutdown()
            finally:
                self._detach()
        return None


def _shutdown_change(params: Mapping[str, Any]) -> SessionChange:
    """``session_shutdown`` navigates whatever its params say: a reason that is not Pi's shape
    is dropped (the navigation then names none), never a reason to skip the navigation."""
    try:
        return protocol.session_change(params, event=protocol.Method.SESSION_SHUTDOWN.value)
    except ProtocolError:
        return SessionChange(event=protocol.Method.SESSION_SHUTDOWN.value)


def _preview(line: bytes, limit: int = 120) -> str:
    text = line[:limit].decode("utf-8", "replace")
    return repr(text) + ("..." if len(line) > limit else "")


def _format_exc() -> str:
    # Imported on the first failure only: ``traceback`` (with linecache and tokenize) is ~4 ms
    # of every child bridge's start-up, and a healthy bridge never formats a traceback.
    import traceback  # noqa: PLC0415

    return traceback.format_exc()
