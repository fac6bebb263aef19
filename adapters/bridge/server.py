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
from collections.abc import Iterator, Mapping
from typing import IO, Any

import attrs

from adapters.bridge import protocol
from adapters.bridge.methods import Handler, RoleMethods, current_traceback
from adapters.bridge.protocol import (
    AnswerableError,
    MalformedLine,
    ProtocolError,
    Request,
    RequestId,
)
from adapters.bridge.roles import BridgeRole, Notification
from application.ports import ToolFailure, ToolResult

DEFAULT_WORKERS = 8
_SKIP_CHUNK = 64 * 1024


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
    _output_closed: bool = attrs.field(init=False, default=False)
    _methods: RoleMethods = attrs.field(init=False)
    _handlers: dict[str, Handler] = attrs.field(init=False)
    # Serving threads: the input is read by one at a time (``_input_lock``); ``_idle`` counts
    # those waiting for their turn to read, ``_threads`` every one started.
    _input_lock: threading.Lock = attrs.field(init=False, factory=threading.Lock)
    _threads_lock: threading.Lock = attrs.field(init=False, factory=threading.Lock)
    _threads: list[threading.Thread] = attrs.field(init=False, factory=list)
    _idle: int = attrs.field(init=False, default=0)
    _failure: BaseException | None = attrs.field(init=False, default=None)

    @_methods.default
    def _role_methods(self) -> RoleMethods:
        return RoleMethods(self._role, emit=self.emit, log=self.log)

    @_handlers.default
    def _method_handlers(self) -> dict[str, Handler]:
        return self._methods.handlers()

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
            self._methods.detach()
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
            self.log(f"a serving thread failed:\n{current_traceback()}")

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
            self.log(f"{request.method} #{request.id} failed:\n{current_traceback()}")
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


def _preview(line: bytes, limit: int = 120) -> str:
    text = line[:limit].decode("utf-8", "replace")
    return repr(text) + ("..." if len(line) > limit else "")
