"""What each bridge method does with the role: the handler per method the server dispatches
to, and the role's notifications, attached at ``session_start`` and detached at
``session_shutdown`` or when the server stops serving (whichever comes first)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from adapters.bridge import params as request_params
from adapters.bridge import protocol
from adapters.bridge.protocol import ProtocolError
from adapters.bridge.roles import BridgeRole, Emit
from application.ports import (
    CommandCompletions,
    CommandDialogs,
    RequestAdmission,
    SessionChange,
    SessionControl,
)

Handler = Callable[[Mapping[str, Any]], object]


class RoleMethods:
    """The handlers of one bridge's role. Thread-safe: requests are served concurrently."""

    def __init__(self, role: BridgeRole, *, emit: Emit, log: Callable[[str], None]) -> None:
        self._role = role
        self._emit = emit
        self._log = log
        self._state_lock = threading.Lock()
        self._attached = False
        self._detached = False

    def handlers(self) -> dict[str, Handler]:
        return {
            protocol.Method.HELLO: self._hello,
            protocol.Method.SESSION_START: self._session_start,
            protocol.Method.BEFORE_AGENT_START: self._before_agent_start,
            protocol.Method.TOOL_CALL: self._tool_call,
            protocol.Method.EXECUTE_TOOL: self._execute_tool,
            protocol.Method.MESSAGE_END: self._message_end,
            protocol.Method.CONTEXT: self._context,
            protocol.Method.PROVIDER_REQUEST: self._provider_request,
            protocol.Method.COMMAND: self._command,
            protocol.Method.COMPLETE: self._complete,
            protocol.Method.CANCEL_TOOL: self._cancel_tool,
            protocol.Method.UI_ANSWER: self._ui_answer,
            protocol.Method.NAVIGATION: self._navigation,
            protocol.Method.SESSION_SHUTDOWN: self._session_shutdown,
        }

    def _attach_once(self) -> None:
        source = self._role.notifications
        with self._state_lock:
            if source is None or self._attached or self._detached:
                return
            self._attached = True
        source.attach(self._emit)

    def detach(self) -> None:
        source = self._role.notifications
        with self._state_lock:
            attached = self._attached and not self._detached
            self._detached = True
        if source is not None and attached:
            try:
                source.detach()
            except Exception:
                self._log(f"detaching notifications failed:\n{current_traceback()}")

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
        identity = request_params.session_identity(params)
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
        decision = self._role.events.tool_call(*request_params.tool_request(params, "input"))
        return protocol.decision_payload(decision)

    def _execute_tool(self, params: Mapping[str, Any]) -> object:
        self._hear_session_models(params)
        # Answered by ``protocol.tool_result_line`` (see ``_serve``).
        return self._role.events.execute_tool(*request_params.tool_request(params, "params"))

    def _hear_session_models(self, params: Mapping[str, Any]) -> None:
        if "sessionModels" in params and self._role.control is not None:
            # Imported on first use: a child's bridge is never sent models, nor loads them.
            from adapters.bridge.session_models import tell  # noqa: PLC0415

            tell(self._role.control, params, self._log)

    def _message_end(self, params: Mapping[str, Any]) -> object:
        self._role.events.message_end(request_params.require_object(params, "message"))
        return None

    def _context(self, params: Mapping[str, Any]) -> object:
        self._role.events.context()
        return None

    def _provider_request(self, params: Mapping[str, Any]) -> object:
        events = self._role.events
        if not isinstance(events, RequestAdmission):
            raise ProtocolError(
                protocol.ResponseErrorCode.UNKNOWN_METHOD,
                f"the {self._role.name} role admits no model requests",
            )
        return {"admit": events.provider_request()}

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
        name = request_params.require_str(params, "name")
        answers = request_params.answers(params)
        if answers is None:
            return protocol.command_answer_payload(commands.command(name, args))
        # The person's answers to the command's questions (a dialog, docs/bridge.md).
        if not isinstance(commands, CommandDialogs):
            raise ProtocolError(
                protocol.ResponseErrorCode.INVALID_PARAMS,
                f"the {self._role.name} role's commands ask no questions: no answers expected",
            )
        return protocol.command_answer_payload(commands.answered(name, args, answers))

    def _complete(self, params: Mapping[str, Any]) -> object:
        """The argument texts a slash command offers for what is typed; none from a role
        whose commands do not complete."""
        commands: object = self._role.commands  # the completions are an optional extra
        name = request_params.require_str(params, "name")
        text = params.get("text", "")
        if not isinstance(text, str):
            raise ProtocolError(
                protocol.ResponseErrorCode.INVALID_PARAMS, "params.text must be a string"
            )
        if not isinstance(commands, CommandCompletions):
            return {"items": []}
        return {"items": list(commands.completions(name, text))}

    def _control(self) -> SessionControl:
        control = self._role.control
        if control is None:
            raise ProtocolError(
                protocol.ResponseErrorCode.UNKNOWN_METHOD,
                f"the {self._role.name} role runs no cancellable tools",
            )
        return control

    def _cancel_tool(self, params: Mapping[str, Any]) -> object:
        self._control().cancel_tool(request_params.require_str(params, "toolCallId"))
        return None

    def _ui_answer(self, params: Mapping[str, Any]) -> object:
        control = self._control()
        control.ui_answer(
            request_params.require_str(params, "requestId"),
            request_params.require_bool(params, "confirmed"),
        )
        return None

    def _navigation(self, params: Mapping[str, Any]) -> object:
        try:
            change = request_params.session_change(params)
        except ProtocolError:
            # A malformed reason or position is dropped, never a reason to skip navigating
            # (as for ``session_shutdown``); without an event name there is nothing to judge.
            change = SessionChange(event=request_params.require_str(params, "event"))
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
                self.detach()
        return None


def _shutdown_change(params: Mapping[str, Any]) -> SessionChange:
    """``session_shutdown`` navigates whatever its params say: a reason that is not Pi's shape
    is dropped (the navigation then names none), never a reason to skip the navigation."""
    try:
        return request_params.session_change(params, event=protocol.Method.SESSION_SHUTDOWN.value)
    except ProtocolError:
        return SessionChange(event=protocol.Method.SESSION_SHUTDOWN.value)


def current_traceback() -> str:
    """The traceback of the exception being handled. Imported on the first failure only:
    ``traceback`` (with linecache and tokenize) is ~4 ms of every child bridge's start-up, and a
    healthy bridge never formats a traceback."""
    import traceback  # noqa: PLC0415

    return traceback.format_exc()
