"""The main Pi's side of pi-squad: the squad tools, the review gate, and squad drivers.

Registered in the user's own Pi (never in a child): ``squad``, ``squad_status``,
``squad_modify``, ``squad_review`` and ``squad_message``. A ``squad`` call publishes the squad
and starts a driver thread for it in this process; scheduler notices are delivered into the
session. ``session_shutdown`` stops every driver, suspending live tasks on their sessions.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from application.delegation.host import DelegationHost
from application.delegation.tool import DELEGATE_TOOL, delegate_tool, delegate_tool_spec
from application.flows.flow_card import FLOW_CARD_TYPE
from application.flows.flow_sessions import FLOWS_COMMAND, FlowSessions
from application.flows.flow_tool import FLOW_TOOL, flow_tool_spec
from application.flows.run_flow import FlowRunner
from application.ports import (
    ALLOW,
    AgentDirectory,
    ChildRuntime,
    CommandAnswer,
    LockFactory,
    Registrations,
    SessionEvent,
    SessionIdentity,
    SessionNotification,
    Store,
    TempDirs,
    ToolDecision,
    ToolFailure,
    ToolResult,
)
from application.squads.create_squad import Publisher
from application.squads.live_view import DEFAULT_INTERVAL_SECONDS, LiveView, ui_notice
from application.squads.mailbox import Mailbox
from application.squads.operations import Action, SquadOperations
from application.squads.review import ReviewRecorder
from application.squads.scheduler import Notice, Scheduler
from application.squads.scheduler.completion import REVIEW_REQUIRED
from application.squads.session_notices import (
    agent_start_context,
    awaiting_review,
    lost_work,
    may_need_the_user,
    notice_payload,
    shutdown_notice,
    startup_notice,
    untold_review,
)
from application.squads.squad_call import classify_call
from application.squads.squad_commands import SQUAD_COMMAND, EvidencePack, SquadCommands
from application.squads.squad_drivers import SquadDrivers
from application.squads.squad_owner import revivable_here
from application.squads.squad_start import start_squad
from application.squads.squad_tools import squad_tools
from application.squads.status import SquadStatusReader, SquadStatusReport, review_gate_text
from application.tool_calls import (
    message_call,
    modify_call,
    review_call,
    status_call,
)
from domain.delegation.navigation import NAVIGATION_EVENTS
from domain.errors import PiSquadError
from domain.flows.models import SessionModels
from domain.squad.model import Squad, SquadStatus
from domain.squad.references import expand_squad_prefix


@attrs.define(kw_only=True, eq=False)
class MainRole:
    """``MainRoleHandler`` for ``pi-squad bridge --role main``."""

    _cwd: str
    _store: Store
    _publisher: Callable[[], Publisher]
    _agents: AgentDirectory
    _operations: SquadOperations
    _reviews: ReviewRecorder
    _mailbox: Mailbox
    _status: SquadStatusReader
    _make_scheduler: Callable[[str, ChildRuntime, Callable[[Notice], None]], Scheduler]
    _runtime: Callable[[], ChildRuntime]
    _drive: Callable[[Scheduler, threading.Event], None]
    _temp_dirs: TempDirs
    _write_report: Callable[[str], EvidencePack] | None = None
    # The ``flow`` tool (docs/flows.md): a runner per call; ``None``: the tool is not offered.
    _flows: Callable[[], FlowRunner] | None = None
    # The ``delegate`` tool (docs/delegation.md): a host per call; ``None``: not offered.
    _delegation: Callable[[], DelegationHost] | None = None
    _view_interval: float = DEFAULT_INTERVAL_SECONDS
    # Whether another process drives a squad now (it keeps the squad's owner); ``None``: not asked.
    _locks: LockFactory | None = None
    _drivers: SquadDrivers = attrs.field(init=False)
    # This Pi session's file (``identify``): recorded as the owner of every squad it drives.
    _session_file: str | None = attrs.field(init=False, default=None)
    _emit: Callable[[SessionNotification], None] | None = attrs.field(init=False, default=None)
    _view: LiveView = attrs.field(init=False)
    _commands: SquadCommands = attrs.field(init=False)
    _flow_sessions: FlowSessions = attrs.field(init=False)

    @_flow_sessions.default
    def _sessions(self) -> FlowSessions:
        # Without a runner neither the tool nor /flows is offered; the controls then find no flow.
        runner = self._flows if self._flows is not None else _no_flow_runner
        return FlowSessions(make_runner=runner, cwd=self._cwd, send=self._send, row=self._tool_row)

    @_drivers.default
    def _squad_drivers(self) -> SquadDrivers:
        return SquadDrivers(
            store=self._store,
            make_scheduler=self._make_scheduler,
            runtime=self._runtime,
            drive=self._drive,
            notify=self.notify,
            locks=self._locks,
        )

    @_view.default
    def _live_view(self) -> LiveView:
        return LiveView(self._shown_reports, interval=self._view_interval)

    @_commands.default
    def _squad_commands(self) -> SquadCommands:
        return SquadCommands(self._status, self._operations, self, self._write_report)

    # -- PiEvents -----------------------------------------------------------------------------

    def registrations(self) -> Registrations:
        base = Registrations(tools=squad_tools(), bootstrap=True, commands=(SQUAD_COMMAND,))
        if self._delegation is not None:
            # Its jobs are bound to the task generation: Pi's session switches are navigation.
            base = attrs.evolve(
                base, tools=(*base.tools, delegate_tool_spec()), navigation=NAVIGATION_EVENTS
            )
        if self._flows is None:
            return base
        return attrs.evolve(
            base,
            tools=(*base.tools, flow_tool_spec()),
            commands=(*base.commands, FLOWS_COMMAND),
            entry_renderers=(FLOW_CARD_TYPE,),
        )

    def command(self, name: str, args: str) -> CommandAnswer:
        if name == FLOWS_COMMAND.name and self._flows is not None:
            return self._flow_sessions.command(args)
        if name != SQUAD_COMMAND.name:
            raise ToolFailure(f"/{name} is not a pi-squad command")
        return self._commands.run(args)

    # -- SessionControl: the flows' (docs/flows.md, "Faces inside Pi") -------------------------

    def session_ui(self, has_ui: bool) -> None:
        self._flow_sessions.session_ui(has_ui)

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
        handlers: dict[str, Callable[[Mapping[str, Any]], str]] = {
            "squad": lambda call: self._squad(call, self._tool_row(tool_call_id)),
            "squad_status": self._squad_status,
            "squad_modify": self._squad_modify,
            "squad_review": self._squad_review,
            "squad_message": self._squad_message,
        }
        if self._delegation is not None:
            make_host = self._delegation
            handlers[DELEGATE_TOOL] = lambda call: delegate_tool(make_host(), call)
        handler = handlers.get(tool_name)
        flow = tool_name == FLOW_TOOL and self._flows is not None
        if handler is None and not flow:
            raise ToolFailure(f"tool {tool_name!r} is not provided by pi-squad")
        if not isinstance(params, Mapping):
            raise ToolFailure(f"{tool_name}: arguments must be an object")
        if flow:
            return self._flow_sessions.run_tool(tool_call_id, params)
        assert handler is not None
        try:
            text = handler(params)
        except PiSquadError as error:
            raise ToolFailure(f"{error.code}: {error.message}") from None
        return ToolResult(texts=(text,), details={})

    # -- notifications and lifecycle ------------------------------------------------------------

    def attach(self, emit: Callable[[SessionNotification], None]) -> None:
        self._emit = emit
        self._view.attach(emit)
        self._greet(emit)

    def _greet(self, emit: Callable[[SessionNotification], None]) -> None:
        """At session start: this project's squads that need the user, a driver again for each
        whose driver died mid-run if this session owns it (``application/squads/squad_owner.py``),
        and each review gate no session was told of yet. An attested flow's squad is its
        flow's: never revived nor listed here."""
        reports: list[SquadStatusReport] = []
        revived: list[str] = []
        elsewhere: list[SquadStatusReport] = []
        for report in self._project_reports(
            lambda squad: squad.flow_id is None and may_need_the_user(squad)
        ):
            if not lost_work(report):
                reports.append(report)
            elif revivable_here(report.squad, self._session_file):
                self.ensure_driver(report.squad.id)
                revived.append(report.squad.id)
            else:
                elsewhere.append(report)
            if untold_review(report):  # reached review headless, with no session to tell
                self.notify(Notice(REVIEW_REQUIRED, report.squad.id, review_gate_text(report)))
        text = startup_notice(reports, revived, elsewhere)
        if text is not None:
            emit(ui_notice(text, "warning"))

    def _project_reports(
        self, wanted: Callable[[Squad], bool] = lambda squad: True
    ) -> list[SquadStatusReport]:
        """This project's squads that ``wanted`` keeps (judged on the record alone, before the
        costlier status read); one that cannot be read is reported where it is used instead."""
        reports: list[SquadStatusReport] = []
        for squad in self._store.list_squads():
            if squad.cwd != self._cwd or not wanted(squad):
                continue
            try:
                reports.append(self._status.status(squad.id))
            except PiSquadError:
                continue
        return reports

    def detach(self) -> None:
        self._view.detach()
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

    def _shown_reports(self) -> list[SquadStatusReport]:
        """The squads the live view shows: those this session drives, and this project's
        squads awaiting review."""
        # Every second: only the squads shown are read in full (status audits attestations).
        driven_ids = self._drivers.driven()
        driven = [self._status.status(squad_id) for squad_id in driven_ids]
        waiting = self._project_reports(
            lambda squad: squad.id not in driven_ids and awaiting_review(squad)
        )
        return driven + waiting

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
        """Shows ``text`` in the running tool's row in Pi (``onUpdate``), while attached."""

        def show(text: str) -> None:
            data = {"toolCallId": tool_call_id, "text": text}
            self._send(SessionNotification(SessionEvent.TOOL_UPDATE, data))

        return show

    def _squad(self, params: Mapping[str, Any], progress: Callable[[str], None]) -> str:
        started = start_squad(
            classify_call(params),
            publisher=self._publisher(),
            catalog=self._agents.catalog(self._cwd),
            cwd=self._cwd,
            planner_runtime=self._runtime,
            temp_dirs=self._temp_dirs,
            progress=progress,
        )
        self.ensure_driver(started.squad_id)
        return started.text()

    def target(self, explicit: str | None, *, want_review: bool = False) -> str:
        """The squad ``explicit`` names (a unique prefix will do), else this project's newest
        (awaiting review, with ``want_review``)."""
        if explicit is not None and explicit.strip():
            return expand_squad_prefix(explicit.strip(), self._store.list_squad_ids())
        for squad in reversed(self._store.list_squads()):
            if squad.cwd == self._cwd and (not want_review or squad.status is SquadStatus.REVIEW):
                return squad.id
        raise ToolFailure(
            "No squad is awaiting orchestrator review." if want_review else "No squad found."
        )

    def _squad_status(self, params: Mapping[str, Any]) -> str:
        return self._status.status(self.target(status_call(params).squad_id)).text()

    def _squad_modify(self, params: Mapping[str, Any]) -> str:
        call = modify_call(params)
        action = call.action
        if action is Action.CANCEL:
            squad_id = (call.squad_id or "").strip()
            if not squad_id:
                raise ToolFailure("cancel requires exact squadId; no squad was changed.")
        else:
            squad_id = self.target(call.squad_id)
        result = self._operations.apply(
            squad_id,
            action,
            task_id=call.task_id,
            depends=call.depends,
            output=call.output,
            task=call.task,
        )
        scheduler = self._drivers.scheduler(squad_id)
        if scheduler is not None:
            for task_id in result.reset_budgets:
                scheduler.reset_budgets(task_id)
        if action in {Action.PAUSE, Action.CANCEL}:
            self.stop_driver(squad_id)
        elif result.changed:
            self.ensure_driver(squad_id)
        return result.text

    def _squad_review(self, params: Mapping[str, Any]) -> str:
        call = review_call(params)
        squad_id = self.target(call.squad_id, want_review=True)
        return self._reviews.record_call(squad_id, call).text

    def _squad_message(self, params: Mapping[str, Any]) -> str:
        call = message_call(params)
        squad_id = self.target(call.squad_id)
        snapshot = self._store.snapshot(squad_id)
        task_id = call.target(snapshot.tasks)
        scheduler = self._drivers.scheduler(squad_id)
        live_child = scheduler.live.get(task_id) if scheduler is not None else None
        outcome = self._mailbox.send(
            squad_id,
            task_id,
            call.message,
            live=live_child.handle if live_child is not None else None,
            expects_reply=call.expect_reply,
        )
        self.ensure_driver(squad_id)
        return outcome.text

    # -- drivers --------------------------------------------------------------------------------

    def ensure_driver(self, squad_id: str) -> None:
        """This session drives ``squad_id`` (and so owns it) from now on."""
        self._drivers.ensure(squad_id, self._session_file)

    def stop_driver(self, squad_id: str) -> None:
        self._drivers.stop(squad_id)


def _no_flow_runner() -> FlowRunner:
    raise ToolFailure("flows are not available in this session")
