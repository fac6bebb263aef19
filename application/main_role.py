"""The main Pi's side of pi-squad: the squad tools, the review gate, and squad drivers.

Registered in the user's own Pi (never in a child): ``squad``, ``squad_status``,
``squad_modify``, ``squad_review`` and ``squad_message``. A ``squad`` call publishes the squad
and starts a driver thread for it in this process; scheduler notices are delivered into the
session. ``session_shutdown`` stops every driver, suspending live tasks on their sessions.
The squad tools answer in ``application.squads.squad_tool_calls``; what the session is told of
its project's squads (the greeting, the live view) is ``application.squads.project_squads``.
The ``flow`` and ``delegate`` tools are offered when their factories are given.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from application.delegation.host import DelegationHost
from application.delegation.pi_face import DELEGATE_COMMAND, DelegationFace
from application.delegation.tool import DELEGATE_ENTRY_TYPE, DELEGATE_TOOL, delegate_tool_spec
from application.flows.detached_flows import DETACH_AFTER_SECONDS
from application.flows.flow_card import FLOW_CARD_TYPE
from application.flows.flow_sessions import FLOWS_COMMAND, FlowSessions
from application.flows.flow_tool import FLOW_TOOL, flow_tool_spec
from application.flows.run_flow import FlowRunner
from application.ports import (
    ALLOW,
    Clock,
    CommandAnswer,
    Registrations,
    SessionEvent,
    SessionIdentity,
    SessionNotification,
    Store,
    ToolDecision,
    ToolFailure,
    ToolResult,
)
from application.squads.child_activity import ChildActivities
from application.squads.inspect_view import SquadInspector
from application.squads.live_view import DEFAULT_INTERVAL_SECONDS, LiveView, ui_notice
from application.squads.operations import SquadOperations
from application.squads.project_squads import ProjectSquads
from application.squads.review import ReviewRecorder
from application.squads.review_dialog import ReviewDialog
from application.squads.scheduler import Notice
from application.squads.scheduler.completion import REVIEW_REQUIRED
from application.squads.session_notices import (
    agent_start_context,
    notice_payload,
    shutdown_notice,
)
from application.squads.squad_commands import SQUAD_COMMAND, EvidencePack, SquadCommands
from application.squads.squad_drivers import SquadDrivers
from application.squads.squad_tool_calls import SquadTools
from application.squads.squad_tools import squad_tools
from application.squads.status import SquadStatusReader, SquadStatusReport
from domain.delegation.navigation import NAVIGATION_EVENTS
from domain.errors import PiSquadError
from domain.flows.models import SessionModels


@attrs.define(kw_only=True, eq=False)
class MainRole:
    """``MainRoleHandler`` for ``pi-squad bridge --role main``."""

    _cwd: str
    _store: Store
    # What each running child is doing (the widget, the inspect overlay) is read against it.
    _clock: Clock
    _status: SquadStatusReader
    _operations: SquadOperations
    _reviews: ReviewRecorder
    # This session's squad drivers, given ``notify`` (this role's).
    _make_drivers: Callable[..., SquadDrivers]
    # The squad tools, given ``control`` (this role) and ``scheduler`` (its drivers').
    _make_tools: Callable[..., SquadTools]
    _write_report: Callable[[str], EvidencePack] | None = None
    # The ``flow`` tool (docs/flows.md): a runner per call; ``None``: the tool is not offered.
    _flows: Callable[[], FlowRunner] | None = None
    # The ``delegate`` tool (docs/delegation.md): a host per call; ``None``: not offered.
    _delegation: Callable[[], DelegationHost] | None = None
    _view_interval: float = DEFAULT_INTERVAL_SECONDS
    # How long a ``flow`` call's answer waits before its flow continues detached.
    _flow_detach_after: float = DETACH_AFTER_SECONDS
    _drivers: SquadDrivers = attrs.field(init=False)
    # This Pi session's file (``identify``): recorded as the owner of every squad it drives.
    _session_file: str | None = attrs.field(init=False, default=None)
    _emit: Callable[[SessionNotification], None] | None = attrs.field(init=False, default=None)
    _project: ProjectSquads = attrs.field(init=False)
    _view: LiveView = attrs.field(init=False)
    _commands: SquadCommands = attrs.field(init=False)
    _tools: SquadTools = attrs.field(init=False)
    _flow_sessions: FlowSessions = attrs.field(init=False)
    # The ``delegate`` tool, ``/delegate`` and the jobs' live row; ``None`` without a host.
    _delegate_face: DelegationFace | None = attrs.field(init=False)

    @_delegate_face.default
    def _face(self) -> DelegationFace | None:
        if self._delegation is None:
            return None
        return DelegationFace(self._delegation, interval=self._view_interval)

    @_flow_sessions.default
    def _sessions(self) -> FlowSessions:
        # Without a runner neither the tool nor /flows is offered; the controls then find no flow.
        runner = self._flows if self._flows is not None else _no_flow_runner
        return FlowSessions(
            make_runner=runner,
            cwd=self._cwd,
            send=self._send,
            row=self._tool_row,
            detach_after=self._flow_detach_after,
        )

    @_drivers.default
    def _squad_drivers(self) -> SquadDrivers:
        return self._make_drivers(notify=self.notify)

    @_project.default
    def _project_squads(self) -> ProjectSquads:
        return ProjectSquads(self._cwd, self._store, self._status)

    @_view.default
    def _live_view(self) -> LiveView:
        return LiveView(
            self.shown_reports,
            interval=self._view_interval,
            activities=ChildActivities(self._store, self._clock),
        )

    @_commands.default
    def _squad_commands(self) -> SquadCommands:
        return SquadCommands(
            self._status,
            self._operations,
            self,
            self._write_report,
            inspector=SquadInspector(self._store, self._clock),
            review_dialog=ReviewDialog(self._reviews),
        )

    @_tools.default
    def _squad_tools(self) -> SquadTools:
        return self._make_tools(control=self, scheduler=self._drivers.scheduler)

    # -- PiEvents -----------------------------------------------------------------------------

    def registrations(self) -> Registrations:
        return main_registrations(
            delegation=self._delegation is not None, flows=self._flows is not None
        )

    def command(self, name: str, args: str) -> CommandAnswer:
        if name == FLOWS_COMMAND.name and self._flows is not None:
            return self._flow_sessions.command(args)
        if name == DELEGATE_COMMAND.name and self._delegate_face is not None:
            return self._delegate_face.command(args)
        if name != SQUAD_COMMAND.name:
            raise ToolFailure(f"/{name} is not a pi-squad command")
        try:
            return self._commands.run(args)
        finally:
            self._view.refresh()  # what it changed is drawn before the answer, as a tool's

    def answered(self, name: str, args: str, answers: Mapping[str, str]) -> CommandAnswer:
        """``CommandDialogs``: ``/squad review`` asks a person for the verdict and evidence."""
        if name != SQUAD_COMMAND.name:
            raise ToolFailure(f"/{name} asks no questions")
        try:
            return self._commands.answered(args, answers)
        finally:
            self._view.refresh()  # a recorded review is drawn before the answer, as a command's

    def completions(self, name: str, text: str) -> tuple[str, ...]:
        """``CommandCompletions``: ``/squad`` completes its subcommands and this project's
        squad ids; the other commands complete nothing."""
        return self._commands.completions(text) if name == SQUAD_COMMAND.name else ()

    # -- SessionControl: the flows' (docs/flows.md, "Faces inside Pi") -------------------------

    def session_ui(self, has_ui: bool) -> None:
        self._flow_sessions.session_ui(has_ui)
        self._commands.session_ui(has_ui)

    def cancel_tool(self, tool_call_id: str) -> None:
        self._flow_sessions.cancel_tool(tool_call_id)

    def ui_answer(self, request_id: str, confirmed: bool) -> None:
        self._flow_sessions.ui_answer(request_id, confirmed)

    def session_models(self, models: SessionModels) -> None:
        self._flow_sessions.session_models(models)

    def session_start(self) -> None:
        return None

    def identify(self, identity: SessionIdentity) -> None:
        self._session_file = identity.session_file

    def before_agent_start(self) -> str | None:
        return agent_start_context(self._store, self._status, self._cwd, self._drivers.driven())

    def tool_call(self, tool_call_id: str, tool_name: str, tool_input: object) -> ToolDecision:
        return ALLOW

    def message_end(self, message: Mapping[str, Any]) -> None:
        return None

    def context(self) -> None:
        return None

    def execute_tool(self, tool_call_id: str, tool_name: str, params: object) -> ToolResult:
        handler = self._tools.handlers(self._tool_row(tool_call_id)).get(tool_name)
        flow = tool_name == FLOW_TOOL and self._flows is not None
        face = self._delegate_face if tool_name == DELEGATE_TOOL else None
        if handler is None and not flow and face is None:
            raise ToolFailure(f"tool {tool_name!r} is not provided by pi-squad")
        if not isinstance(params, Mapping):
            raise ToolFailure(f"{tool_name}: arguments must be an object")
        if flow:
            return self._flow_sessions.run_tool(tool_call_id, params)
        if face is not None:
            return face.tool(params)
        assert handler is not None
        try:
            text = handler(params)
        except PiSquadError as error:
            raise ToolFailure(f"{error.code}: {error.message}") from None
        finally:
            self._view.refresh()  # its write drawn before its result, not at the next poll
        return ToolResult(texts=(text,), details={})

    # -- notifications and lifecycle ------------------------------------------------------------

    def attach(self, emit: Callable[[SessionNotification], None]) -> None:
        self._emit = emit
        self._view.attach(emit)
        if self._delegate_face is not None:
            self._delegate_face.attach(emit)
        self._greet(emit)

    def _greet(self, emit: Callable[[SessionNotification], None]) -> None:
        text = self._project.greeting(
            self._session_file, revive=self.ensure_driver, notify=self.notify
        )
        if text is not None:
            emit(ui_notice(text, "warning"))

    def detach(self) -> None:
        self._view.detach()
        if self._delegate_face is not None:
            self._delegate_face.detach()
        self._emit = None

    def _send(self, notification: SessionNotification) -> bool:
        """Into the session now; ``False`` when none is attached."""
        emit = self._emit
        if emit is None:
            return False
        emit(notification)
        return True

    def notify(self, notice: Notice) -> None:
        """Scheduler notices, from driver threads, into the session (dropped when detached). A
        review gate that reached the session is marked notified; one that did not is sent again
        when a session starts."""
        emit = self._emit
        if emit is not None:
            emit(SessionNotification(SessionEvent.SEND_MESSAGE, notice_payload(notice)))
            if notice.kind == REVIEW_REQUIRED:
                self._reviews.mark_notified(notice.squad_id)
        self._view.refresh()

    def expand_view(self, expanded: bool) -> None:
        self._view.expand(expanded)

    def shown_reports(self) -> list[SquadStatusReport]:
        """The squads the widget shows (``/squad inspect`` drills into their tasks)."""
        return self._project.shown(self._drivers.driven())

    def session_shutdown(self) -> None:
        self._flow_sessions.cancel_all()
        self._drivers.stop_all(self._announce_shutdown)

    def _announce_shutdown(self, driving: list[str]) -> None:
        text = shutdown_notice(driving)
        emit = self._emit
        if text is not None and emit is not None:
            emit(ui_notice(text, "warning", also_stderr=True))

    # -- tools ----------------------------------------------------------------------------------

    def _tool_row(self, tool_call_id: str) -> Callable[[str], None]:
        return tool_row(self._send, tool_call_id)

    def target(self, explicit: str | None, *, want_review: bool = False) -> str:
        """The squad ``explicit`` names, else this project's newest (``SquadTools.target``)."""
        return self._tools.target(explicit, want_review=want_review)

    def squad_ids(self) -> tuple[str, ...]:
        """This project's squads, newest first (what ``/squad`` completes)."""
        return self._project.ids()

    # -- drivers --------------------------------------------------------------------------------

    def ensure_driver(self, squad_id: str) -> None:
        """This session drives ``squad_id`` (and so owns it) from now on."""
        self._drivers.ensure(squad_id, self._session_file)

    def stop_driver(self, squad_id: str) -> None:
        self._drivers.stop(squad_id)


def main_registrations(*, delegation: bool, flows: bool) -> Registrations:
    """What the main role installs in Pi: the squad tools and ``/squad``, then ``delegate`` and
    ``/delegate`` with a grant, ``flow`` and ``/flows`` with a runner."""
    base = Registrations(tools=squad_tools(), bootstrap=True, commands=(SQUAD_COMMAND,))
    if delegation:
        # Its jobs are bound to the task generation: Pi's session switches are navigation.
        base = attrs.evolve(
            base,
            tools=(*base.tools, delegate_tool_spec()),
            navigation=NAVIGATION_EVENTS,
            commands=(*base.commands, DELEGATE_COMMAND),
            entry_renderers=(DELEGATE_ENTRY_TYPE,),
        )
    if not flows:
        return base
    return attrs.evolve(
        base,
        tools=(*base.tools, flow_tool_spec()),
        commands=(*base.commands, FLOWS_COMMAND),
        entry_renderers=(*base.entry_renderers, FLOW_CARD_TYPE),
    )


def tool_row(
    send: Callable[[SessionNotification], bool], tool_call_id: str
) -> Callable[[str], None]:
    """Shows ``text`` in the running tool's row in Pi (``onUpdate``), while attached."""

    def show(text: str) -> None:
        send(
            SessionNotification(
                SessionEvent.TOOL_UPDATE, {"toolCallId": tool_call_id, "text": text}
            )
        )

    return show


def _no_flow_runner() -> FlowRunner:
    raise ToolFailure("flows are not available in this session")
