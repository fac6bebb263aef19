"""The flows of one main Pi session (docs/flows.md, "Faces inside Pi"): each ``flow`` call runs
here with its live row, can be cancelled by the tool's abort signal (Esc, RPC ``abort``), asks
the person to approve the project agents and presets it uses when the session has a UI, and
ends with a durable card; ``/flows`` lists, shows the config, and inspects the running flows.
"""

from __future__ import annotations

import collections
import itertools
import threading
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from application.flows.admission import Approver, ProjectFile
from application.flows.checkpoints import Confirm
from application.flows.detached_flows import (
    DETACH_AFTER_SECONDS,
    FlowFlight,
    RowSink,
    detached_text,
    notice,
    settled_message,
    widget,
)
from application.flows.flow_card import FLOW_CARD_TYPE, flow_card
from application.flows.flow_tool import FlowRow, planned_runs, refusal, report_text
from application.flows.run_flow import FlowContext, FlowRunner
from application.flows.run_records import RecordedFlowRunner
from application.ports import (
    CommandAnswer,
    CommandSpec,
    SessionEvent,
    SessionNotification,
    ToolFailure,
    ToolResult,
)
from domain.flows.call import Mode
from domain.flows.errors import FlowError
from domain.flows.models import SessionModels

FLOWS_USAGE = (
    "/flows [list] (agents and presets), /flows config (the effective config), "
    "/flows inspect (the running flows' children), /flows report FILE (a trace file's report)"
)
FLOWS_COMMAND = CommandSpec(
    name="flows", description=f"pi-squad flows: {FLOWS_USAGE}", session_models=True
)
APPROVAL_TITLE = "pi-squad flow: run project files?"
# A question nobody answers is a refusal, not a hang: the tool's own answer is awaited 15 min.
DEFAULT_APPROVAL_TIMEOUT = 600.0
# Cancels that arrived before their call started (the shim's requests race): a few suffice.
_EARLY_CANCELS = 64

Send = Callable[[SessionNotification], bool]
"""Sends one notification to the session; ``False`` when no session is attached."""


@attrs.define(eq=False)
class _Running:
    runner: FlowRunner
    row: FlowRow


@attrs.define(eq=False)
class _Question:
    tool_call_id: str
    answered: threading.Event = attrs.field(factory=threading.Event)
    confirmed: bool = False


@attrs.define(kw_only=True, eq=False)
class FlowSessions:
    _make_runner: Callable[[], FlowRunner]
    _cwd: str
    _send: Send
    _row: Callable[[str], Callable[[str], None]]
    _approval_timeout: float = DEFAULT_APPROVAL_TIMEOUT
    # How long a ``flow`` call's answer waits before the flow continues detached.
    _detach_after: float = DETACH_AFTER_SECONDS
    _has_ui: bool = attrs.field(init=False, default=False)
    # What the session last said of its models (``None``: nothing yet, and the runner asks
    # Pi's registry itself).
    _models: SessionModels | None = attrs.field(init=False, default=None)
    _lock: threading.Lock = attrs.field(init=False, factory=threading.Lock)
    _running: dict[str, _Running] = attrs.field(init=False, factory=dict)
    _early: collections.deque[str] = attrs.field(
        init=False, factory=lambda: collections.deque(maxlen=_EARLY_CANCELS)
    )
    _questions: dict[str, _Question] = attrs.field(init=False, factory=dict)
    _ids: itertools.count[int] = attrs.field(init=False, factory=itertools.count)

    # -- the tool -----------------------------------------------------------------------------

    def run_tool(self, tool_call_id: str, params: Mapping[str, Any]) -> ToolResult:
        """One ``flow`` call; a refusal is a tool failure carrying the catalogue's advice. A
        call that spawned children answers with its card (``details.entry``). One still running
        after ``detach_after`` seconds answers that it continues detached (``detached_flows``)."""
        sink = RowSink(self._row(tool_call_id))
        row = FlowRow(sink, planned_runs(params))
        runner = self._make_runner()
        with self._lock:
            self._running[tool_call_id] = _Running(runner, row)
            cancelled_early = tool_call_id in self._early
        if cancelled_early:
            runner.cancel()
        ask = self._asker(tool_call_id) if self._has_ui else None
        context = self._context(ask)
        flight = FlowFlight(
            lambda: runner.run(dict(params), context, row.observe, row.activity, row.ceilings),
            name=f"flow-{tool_call_id}",
        )
        if not flight.wait(self._detach_after):
            return self._detach(tool_call_id, runner, row, sink, flight)
        return self._answer(tool_call_id, row, flight)

    def _detach(
        self,
        tool_call_id: str,
        runner: FlowRunner,
        row: FlowRow,
        sink: RowSink,
        flight: FlowFlight,
    ) -> ToolResult:
        """The call answers now; the flow goes on, drawn in a widget, and reports when it
        settles. Esc no longer reaches it (the call is over); the session's end still does."""
        key = f"pi-squad-flow-{tool_call_id}"

        def draw(text: str) -> None:
            self._send(widget(key, text.splitlines()))

        sink.move_to(draw)
        run_id = runner.run_id if isinstance(runner, RecordedFlowRunner) else None

        def settled() -> None:
            try:
                answer = self._answer(tool_call_id, row, flight)
            except ToolFailure as failure:
                text, details, level = str(failure), {"runId": run_id}, "error"
            else:
                text, level = answer.texts[0], "info"
                details = {"runId": run_id, **answer.details}
            self._send(widget(key, None))
            self._send(notice(f"pi-squad: detached flow {run_id or ''} settled", level))
            self._send(settled_message(text, details))

        flight.when_settled(settled)
        text = detached_text(self._detach_after / 60, run_id)
        return ToolResult(texts=(text,), details={"detached": True, "runId": run_id})

    def _answer(self, tool_call_id: str, row: FlowRow, flight: FlowFlight) -> ToolResult:
        try:
            report = flight.result()
        except FlowError as error:
            raise refusal(error) from None
        finally:
            with self._lock:
                self._running.pop(tool_call_id, None)
        row.show_done()
        details: dict[str, Any] = {}
        if report.call.mode not in {Mode.LIST, Mode.SHOW_CONFIG}:
            details["entry"] = {"customType": FLOW_CARD_TYPE, "data": flow_card(report)}
        return ToolResult(texts=(report_text(report),), details=details)

    def cancel_tool(self, tool_call_id: str) -> None:
        """The tool's abort signal: its flow stops every live child and spawns no more, and the
        call answers with the partial results (status ``cancelled``); an open approval question
        is withdrawn."""
        with self._lock:
            running = self._running.get(tool_call_id)
            if running is None:
                self._early.append(tool_call_id)
            questions = [q for q in self._questions.values() if q.tool_call_id == tool_call_id]
        for question in questions:
            question.answered.set()
        if running is not None:
            running.runner.cancel()

    def cancel_all(self) -> None:
        """The session ends: no flow outlives it."""
        with self._lock:
            ids = list(self._running)
        for tool_call_id in ids:
            self.cancel_tool(tool_call_id)

    # -- approval -----------------------------------------------------------------------------

    def session_ui(self, has_ui: bool) -> None:
        self._has_ui = has_ui

    def session_models(self, models: SessionModels) -> None:
        self._models = models

    def _context(self, ask: Confirm | None = None) -> FlowContext:
        """The call's context: who is asked (the project files it uses, its checkpoint), and
        the session's own model, level and registry when it told them, so ``capable`` is the
        model this session runs and the tiers rank what it can run."""
        approve = None if ask is None else _approver(ask)
        models = self._models
        if models is None:
            return FlowContext(cwd=self._cwd, approve=approve, confirm=ask)
        return FlowContext(
            cwd=self._cwd,
            approve=approve,
            confirm=ask,
            session_model=models.model,
            session_provider=models.provider,
            session_thinking=models.thinking,
            available_models=models.available,
        )

    def _asker(self, tool_call_id: str) -> Confirm:
        """Asks the session's person one yes/no question for the call (Pi's ``confirm``
        dialog); no answer within the approval timeout, or no session, is a no."""

        def ask(title: str, message: str) -> bool:
            request_id = f"{tool_call_id}:{next(self._ids)}"
            question = _Question(tool_call_id)
            with self._lock:
                self._questions[request_id] = question
            try:
                data = {"requestId": request_id, "toolCallId": tool_call_id}
                data.update(title=title, message=message)
                if not self._send(SessionNotification(SessionEvent.CONFIRM, data)):
                    return False
                question.answered.wait(self._approval_timeout)
                return question.confirmed
            finally:
                with self._lock:
                    self._questions.pop(request_id, None)

        return ask

    def ui_answer(self, request_id: str, confirmed: bool) -> None:
        with self._lock:
            question = self._questions.get(request_id)
        if question is not None and not question.answered.is_set():
            question.confirmed = confirmed
            question.answered.set()

    # -- /flows -------------------------------------------------------------------------------

    def command(self, args: str) -> CommandAnswer:
        words = args.split()
        sub = words[0] if words else "list"
        if sub == "report" and len(words) > 1:
            return CommandAnswer(notify=self._trace_report(args.strip()[len("report") :].strip()))
        if len(words) > 1 or sub not in {"list", "config", "inspect"}:
            raise ToolFailure(f"unknown /flows subcommand {args.strip()!r}; use {FLOWS_USAGE}")
        if sub == "inspect":
            return CommandAnswer(notify=self._inspect())
        mode = {"list": {"list": True, "agentScope": "all"}, "config": {"showConfig": True}}
        try:
            report = self._make_runner().run(mode[sub], self._context())
        except FlowError as error:
            raise refusal(error) from None
        document = report.document()
        return CommandAnswer(notify=listing(document) if sub == "list" else config_text(document))

    def _trace_report(self, path: str) -> str:
        """``pi-squad trace report FILE``'s text, the path relative to the session's cwd."""
        try:
            found = self._make_runner().trace_report(path, self._cwd)
        except FlowError as error:
            raise refusal(error) from None
        verdict = "complete" if found.complete else "INCOMPLETE evidence"
        return "\n".join([f"Trace report of {path}: {verdict}", *found.lines()])

    def _inspect(self) -> str:
        with self._lock:
            running = list(self._running.items())
        if not running:
            return "No flow is running in this session."
        return "\n\n".join(f"flow call {key}:\n{flow.row.inspect_text()}" for key, flow in running)


def _approver(ask: Confirm) -> Approver:
    """The project files' approval, asked as one question."""
    return lambda files: ask(APPROVAL_TITLE, approval_message(files))


def approval_message(files: tuple[ProjectFile, ...]) -> str:
    lines = [
        "This flow call uses files from this project, which run children with your model, "
        "tools and keys:",
        *(f"  - {file.line()}" for file in files),
        "Approve them for this call? Declining refuses the call; nothing is spawned.",
    ]
    return "\n".join(lines)


def listing(document: Mapping[str, Any]) -> str:
    lines = [f"Flow agents (agentScope {document['agentScope']}):"]
    for agent in document["agents"]:
        tools = "Pi's defaults" if agent["tools"] is None else ",".join(agent["tools"])
        extra = f"tools {tools}"
        if agent["model"]:
            extra += f", model {agent['model']}"
        if agent["thinking"]:
            extra += f", thinking {agent['thinking']}"
        lines.append(f"  {agent['name']} [{agent['source']}] — {agent['description']} ({extra})")
    lines.append("Presets:")
    lines += [
        f"  {p['name']} [{p['source']}] — {p['description']} (overrides "
        f"{','.join(p['overrides']) or 'none'})"
        for p in document["presets"]
    ] or ["  (none)"]
    if document["discoveryIssues"]:
        lines.append("Not loaded:")
        lines += [f"  {issue}" for issue in document["discoveryIssues"]]
    return "\n".join(lines)


def config_text(document: Mapping[str, Any]) -> str:
    config = document["config"]
    lines = ["Flow config:"]
    lines += [f"  {key}: {value}" for key, value in config.items() if key != "schemas"]
    lines.append("Model roster:")
    lines += [f"  {line}" for line in document["modelRoster"]]
    return "\n".join(lines)
