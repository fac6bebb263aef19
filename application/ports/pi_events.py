"""The Pi extension host, as the child and main roles see it: registrations and hook events."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

if TYPE_CHECKING:
    # Only the annotation: a child's bridge never imports the flow model values.
    from domain.flows.models import SessionModels

__all__ = [
    "ALLOW",
    "CommandAnswer",
    "CommandCompletions",
    "CommandDialogs",
    "CommandHandler",
    "CommandQuestion",
    "CommandSpec",
    "PiEvents",
    "QuestionKind",
    "Registrations",
    "RequestAdmission",
    "SessionChange",
    "SessionControl",
    "SessionEvent",
    "SessionIdentity",
    "SessionNotification",
    "ToolDecision",
    "ToolFailure",
    "ToolResult",
    "ToolSpec",
]


@attrs.frozen
class ToolSpec:
    """A tool the shim registers with Pi; ``parameters`` is a JSON Schema object.
    ``session_models``: each execution first tells the role the session's models
    (``SessionControl.session_models``)."""

    name: str
    label: str
    description: str
    parameters: Mapping[str, Any]
    session_models: bool = False


@attrs.frozen
class CommandSpec:
    """A slash command the shim registers with Pi (``/name args``); ``session_models`` as for
    a tool."""

    name: str
    description: str
    session_models: bool = False


@attrs.frozen
class Registrations:
    """What the shim registers in this Pi process. Empty for a legacy child."""

    tools: tuple[ToolSpec, ...] = ()
    guard: bool = False
    message_end: bool = False
    bootstrap: bool = False
    commands: tuple[CommandSpec, ...] = ()
    # Custom entry types (``pi.appendEntry``) the shim draws: their ``data.lines`` as text.
    entry_renderers: tuple[str, ...] = ()
    # Pi session events the shim forwards as ``navigation`` requests, without awaiting them.
    navigation: tuple[str, ...] = ()
    # Pi's ``context`` event (before every model call), forwarded and awaited: a spec child
    # commits the deliveries it has received before the model's next turn.
    context: bool = False
    # Pi's ``before_provider_request`` (right before every model request leaves), forwarded and
    # awaited: the role admits the request (``RequestAdmission``) or the shim stops the process.
    provider_request: bool = False


class QuestionKind(enum.StrEnum):
    """Which of Pi's dialogs asks a question: a choice, one line, or several lines."""

    SELECT = "select"
    INPUT = "input"
    EDITOR = "editor"


@attrs.frozen
class CommandQuestion:
    """A question a slash command asks the person before it acts, in Pi's own dialog
    (``ctx.ui.select`` of ``options``, ``input`` or ``editor``). The shim asks it, then sends
    the command again with ``args`` and every answer so far by ``key``
    (``CommandDialogs.answered``); Esc shows ``cancelled`` and sends nothing more."""

    key: str
    kind: QuestionKind
    title: str
    args: str
    cancelled: str
    options: tuple[str, ...] = ()


@attrs.frozen
class CommandAnswer:
    """What a slash command shows: a notification (``level`` info, warning or error) and, for
    text that should stay in the transcript, a message (``pi.sendMessage``'s first argument);
    ``ui``, a ``ui`` instruction the shim draws in place of the notification (the inspect
    overlay, docs/bridge.md)."""

    notify: str | None = None
    level: str = "info"
    message: Mapping[str, Any] | None = None
    ui: Mapping[str, Any] | None = None
    # What to ask the person next (a session with a UI only; ``CommandQuestion``).
    question: CommandQuestion | None = None


class CommandHandler(Protocol):
    """Serves the slash commands a role registered; a refusal raises ``ToolFailure``."""

    def command(self, name: str, args: str) -> CommandAnswer: ...


@attrs.frozen
class ToolDecision:
    block: bool
    reason: str | None = None


ALLOW = ToolDecision(block=False)


@attrs.frozen
class ToolResult:
    """A successful tool result: text blocks in order, plus ``details``.

    ``utf8`` (optional, empty or one entry per text): ``texts[i].encode("utf-8")`` where the
    producer already holds those bytes (``None`` where it does not), so an adapter writing the
    texts as UTF-8 need not encode them again; a 32 KiB chunk text holding an emoji is stored
    four bytes per character, and re-encoding it costs ~7 us, a third of its escape. The producer
    guarantees the equality (the reader's texts are the strict decode of exactly these bytes);
    it is not part of the value's equality.
    """

    texts: tuple[str, ...]
    details: Mapping[str, Any]
    utf8: tuple[bytes | None, ...] = attrs.field(default=(), eq=False, repr=False)

    @utf8.validator
    def _one_per_text(
        self, _attribute: attrs.Attribute[tuple[bytes | None, ...]], value: tuple[bytes | None, ...]
    ) -> None:
        if value and len(value) != len(self.texts):
            raise ValueError(f"{len(value)} UTF-8 encodings for {len(self.texts)} texts")


@attrs.define
class ToolFailure(Exception):
    """A tool execution failed; Pi shows ``message`` to the model as an error result."""

    message: str


class SessionEvent(enum.StrEnum):
    """The unsolicited events a role sends the shim (``docs/bridge.md``, "Events")."""

    SEND_MESSAGE = "send_message"
    """``{"message": {customType, content, display?, details?}, "options"?: {deliverAs?,
    triggerTurn?}}``: ``pi.sendMessage(message, options)``."""
    UI = "ui"
    """``{"method": "notify", "text", "level", "stderr"?}``, ``{"method": "setStatus", "key",
    "text"}`` or ``{"method": "setWidget", "key", "lines"}`` (``null`` clears): drawn through
    the session's ``ctx.ui``."""
    TOOL_UPDATE = "tool_update"
    """``{"toolCallId", "text"}``: the running tool's ``onUpdate``."""
    CONFIRM = "confirm"
    """``{"requestId", "toolCallId", "title", "message"}``: ask the person through the running
    tool's ``ctx.ui.confirm``; the shim answers with the ``ui_answer`` request."""


@attrs.frozen
class SessionIdentity:
    """The Pi session a main bridge serves, as its ``session_start`` names it
    (``ctx.sessionManager``): its session file (``None`` when Pi keeps none, ``--no-session``)
    and its id. The main role records the file as the owner of the squads it drives."""

    session_file: str | None = None
    session_id: str | None = None


@attrs.frozen
class SessionChange:
    """A Pi session event the shim forwarded (``navigation``, or ``session_shutdown``): its
    name and, where Pi gives them, its ``reason`` (switch, shutdown) and fork ``position``."""

    event: str
    reason: str | None = None
    position: str | None = None


@attrs.frozen
class SessionNotification:
    """An unsolicited message for the Pi session (the bridge sends it as
    ``{"v":1,"event":event,"data":data}``)."""

    event: str
    data: Mapping[str, Any]


class SessionControl(Protocol):
    """What the main role's shim tells it besides Pi's hooks: whether the session has a UI to
    ask (``session_start``), a running tool call aborted (Esc, RPC ``abort``), the answer
    to a ``confirm`` event, and the session's models."""

    def session_ui(self, has_ui: bool) -> None: ...

    def cancel_tool(self, tool_call_id: str) -> None: ...

    def ui_answer(self, request_id: str, confirmed: bool) -> None: ...

    def session_models(self, models: SessionModels) -> None:
        """The session's model, thinking level and available models, as the shim read them
        for the request it is about to serve (a tool or command registered with
        ``session_models``); the latest one holds."""
        ...


@runtime_checkable
class CommandCompletions(Protocol):
    """Serves ``complete`` for a role whose slash commands complete their argument (Tab in
    Pi's editor): every argument text that completes ``text``, whole (Pi replaces the typed
    argument with the one chosen)."""

    def completions(self, name: str, text: str) -> tuple[str, ...]: ...


@runtime_checkable
class CommandDialogs(Protocol):
    """Serves ``command`` sent with ``answers``, for a role whose slash commands ask
    questions (``CommandAnswer.question``): the command ``args`` again, with every answer
    the person gave so far, by question key."""

    def answered(self, name: str, args: str, answers: Mapping[str, str]) -> CommandAnswer: ...


@runtime_checkable
class RequestAdmission(Protocol):
    """Serves ``provider_request`` for a role whose registrations list it (a delegated worker):
    whether the model request Pi is about to send may leave. ``False`` or any exception: the
    shim stops the process before the request is sent."""

    def provider_request(self) -> bool: ...


class PiEvents(Protocol):
    """The events a Pi extension forwards to Python, one method per hook the shim installs.

    The shim calls these through the bridge; the fake-Pi harness calls them directly, in the
    order Pi 0.80.10 does. Any exception is a block (for ``tool_call``) or a failed tool.
    """

    def registrations(self) -> Registrations: ...

    def session_start(self) -> None: ...

    def before_agent_start(self) -> str | None:
        """Text to append to the system prompt (after a blank line), or ``None``."""
        ...

    def tool_call(self, tool_call_id: str, tool_name: str, tool_input: object) -> ToolDecision: ...

    def execute_tool(self, tool_call_id: str, tool_name: str, params: object) -> ToolResult: ...

    def message_end(self, message: Mapping[str, Any]) -> None: ...

    def context(self) -> None:
        """Pi's ``context`` event, before each model call (only when registered)."""
        ...
