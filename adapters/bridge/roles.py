"""What one bridge process serves: a ``PiEvents`` handler, named for the shim, plus hooks.

The child roles come from ``application.child`` (the environment decides, contract §6). The
main role is implemented later on top of the squad runtime: anything satisfying
``MainRoleHandler`` plugs in through ``main_bridge_role``; until then ``InertMainRole`` serves
empty registrations while telling the shim it is the main process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, Protocol

import attrs

from adapters.bridge.protocol import Method
from application.child.closed import FailedClosedRole, InertRole
from application.ports import (
    CommandAnswer,
    CommandHandler,
    PiEvents,
    SessionChange,
    SessionControl,
    SessionIdentity,
    SessionNotification,
    ToolFailure,
)
from domain.child_environment import (
    CHILD_FLAG,
    DelegationWorkerChild,
    FailedClosedChild,
    LegacyChild,
    MainProcess,
    ProcessRole,
    ReadOnlyBashChild,
    SpecChild,
)

if TYPE_CHECKING:
    from domain.flows.models import SessionModels

RoleName = Literal[
    "main", "child-spec", "child-legacy", "child-bash-ro", "child-worker", "child-failed-closed"
]
RequestedRole = Literal["main", "child"]
REQUESTED_ROLES: tuple[RequestedRole, ...] = ("main", "child")


# The bridge's name for the port's message type (re-exported for adapters.bridge users).
Notification = SessionNotification
Emit = Callable[[Notification], None]
"""Sends one notification to the shim; thread-safe; a no-op once the shim is gone."""


class NotificationSource(Protocol):
    """Something that pushes notifications into the Pi session (the main role's squad events).

    ``attach`` is called once, after the first ``session_start`` has been answered (so the
    session exists to receive them); ``detach`` on ``session_shutdown`` or at end of input.
    """

    def attach(self, emit: Emit) -> None: ...

    def detach(self) -> None: ...


class MainRoleHandler(PiEvents, NotificationSource, CommandHandler, SessionControl, Protocol):
    """What the main role implements: the ``PiEvents`` hooks, ``session_shutdown`` (suspends live
    tasks), a notification source, the slash commands and the session controls (UI present,
    tool abort, confirm answers)."""

    def session_shutdown(self) -> None: ...

    def identify(self, identity: SessionIdentity) -> None:
        """Which Pi session this is, before its first ``session_start`` (and ``attach``)."""
        ...


@attrs.frozen
class BridgeRole:
    """Everything one bridge process serves."""

    name: RoleName
    events: PiEvents
    lifecycle: bool = True
    """Whether the shim keeps the bridge and forwards ``session_start``/``session_shutdown``."""
    notifications: NotificationSource | None = None
    on_shutdown: Callable[[], None] | None = None
    commands: CommandHandler | None = None
    """Serves the ``command`` method (the slash commands the registrations list)."""
    control: SessionControl | None = None
    """Serves ``cancel_tool`` and ``ui_answer``, and hears ``session_start``'s ``hasUI``."""
    identify: Callable[[SessionIdentity], None] | None = None
    """Told which Pi session this is by each ``session_start`` (the main role only)."""
    on_session_change: Callable[[SessionChange], None] | None = None
    """Hears the ``navigation`` requests and, before ``on_shutdown``, ``session_shutdown`` with
    its reason (the main role with delegation only); ``None``: both are ignored here."""
    inline: frozenset[str] = frozenset()
    """Methods the server answers on the thread holding its input, before reading on
    (``BridgeServer._take_request``): only ones that are short and never wait on another
    process, since the next line waits for them."""


class InertMainRole(InertRole):
    """``--role main`` until the squad runtime's main role exists: nothing registered."""

    def session_shutdown(self) -> None:
        return None

    def identify(self, identity: SessionIdentity) -> None:
        return None

    def attach(self, emit: Emit) -> None:
        return None

    def detach(self) -> None:
        return None

    def command(self, name: str, args: str) -> CommandAnswer:
        raise ToolFailure(f"/{name} is not available: pi-squad's main role is inert here")

    def session_ui(self, has_ui: bool) -> None:
        return None

    def cancel_tool(self, tool_call_id: str) -> None:
        return None

    def ui_answer(self, request_id: str, confirmed: bool) -> None:
        return None

    def session_models(self, models: SessionModels) -> None:
        return None


def main_bridge_role(handler: MainRoleHandler) -> BridgeRole:
    return BridgeRole(
        name="main",
        events=handler,
        lifecycle=True,
        notifications=handler,
        on_shutdown=handler.session_shutdown,
        commands=handler,
        control=handler,
        identify=handler.identify,
    )


def inert_main_bridge_role() -> BridgeRole:
    return main_bridge_role(InertMainRole())


def failed_closed_bridge_role(reason: str) -> BridgeRole:
    return BridgeRole(
        name="child-failed-closed", events=FailedClosedRole(FailedClosedChild(reason))
    )


def bridge_role_for(
    requested: RequestedRole,
    process_role: ProcessRole,
    *,
    main_role: Callable[[], BridgeRole],
    child_events: Callable[[ProcessRole], PiEvents],
) -> BridgeRole:
    """The role for ``pi-squad bridge --role <requested>`` in an environment classified as
    ``process_role``. The shim asks for ``child`` exactly when ``PI_SQUAD_CHILD=1``; when the
    request and the environment disagree, or the environment fails closed, everything blocks."""
    if isinstance(process_role, FailedClosedChild):
        return BridgeRole(name="child-failed-closed", events=child_events(process_role))
    if requested == "main":
        if isinstance(process_role, MainProcess):
            return main_role()
        return failed_closed_bridge_role(
            f"bridge started with --role main in a child environment ({CHILD_FLAG}=1)"
        )
    if isinstance(process_role, MainProcess):
        return failed_closed_bridge_role(
            f"bridge started with --role child but {CHILD_FLAG} is not 1"
        )
    if isinstance(process_role, LegacyChild):
        return BridgeRole(name="child-legacy", events=child_events(process_role), lifecycle=False)
    if isinstance(process_role, ReadOnlyBashChild):
        # Only the guard: the bridge lives as long as the child's Pi, which closes it at exit.
        return BridgeRole(name="child-bash-ro", events=child_events(process_role), lifecycle=False)
    if isinstance(process_role, DelegationWorkerChild):
        # The broker and its guard only; the bridge closes with the worker's Pi.
        return BridgeRole(name="child-worker", events=child_events(process_role), lifecycle=False)
    assert isinstance(process_role, SpecChild)
    # A chunk read verifies and renders the canonical file, under no lock and waiting on
    # nothing else: served inline, it skips a thread hand-over per read. Pi's parallel reads
    # then run one after the other; each is CPU-bound, on a machine Pi shares. A delivery
    # (``message_end``) only matches a result to its execution and queues it, under short
    # in-memory locks (the commit waits for ``context``): inline as well, the other hand-over
    # of each read goes too (chunk read via bridge 0.95 -> 0.91 ms, delivery 0.30 -> 0.26 ms).
    events = child_events(process_role)
    return BridgeRole(
        name="child-spec",
        events=events,
        # Deliveries received are committed before the session ends. Not at end of input:
        # Pi saves a tool result to its session only after its ``message_end`` handlers, so a
        # Pi that died before its next ``context`` may not hold what was delivered; those
        # chunks are read again, as after a crash before commit (§8).
        on_shutdown=events.context,
        inline=frozenset({Method.EXECUTE_TOOL, Method.MESSAGE_END}),
    )


_inert_main_conforms: type[MainRoleHandler] = InertMainRole
