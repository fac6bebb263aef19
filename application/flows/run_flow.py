"""The flow use case: parse, admit, then run the mode's strategy through the dispatcher; or
answer ``list`` / ``showConfig`` without a child."""

from __future__ import annotations

import posixpath
import threading
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from application.flows.admission import Approver, admit, ask_approval
from application.flows.attested import AttestedFlows, AttestedRuns
from application.flows.checkpoints import CallWrappers, Confirm
from application.flows.child_watch import Activity
from application.flows.code_review import CodeReviews, GitRange
from application.flows.dispatch import (
    SESSION_DIR_MODE,
    ChildDispatcher,
    DispatchSettings,
    Observer,
)
from application.flows.flow_catalogues import expand_call, listing
from application.flows.flow_config import call_roster, config_details, needs_registry
from application.flows.flow_report import FlowReport
from application.flows.return_check import Hooks, ReturnCheck
from application.flows.run_endings import cancelled, close_trace, flow_budgets
from application.flows.trace_report import read_trace_report
from application.flows.trace_setup import (
    NO_TRACE_DEFAULTS,
    TraceDefaults,
    open_trace,
    strict,
    strict_gate,
)
from application.flows.tracing import FlowTrace
from application.flows.workflow_host import WorkflowFiles
from application.ports import (
    AgentDirectory,
    ChildRuntime,
    Clock,
    FileSystem,
    Ids,
    IsolationSupport,
    ModelSource,
    PresetDirectory,
    TraceSinks,
)
from domain.errors import ErrorCode
from domain.flows.call import FlowCall, Mode
from domain.flows.errors import FlowError, refuse
from domain.flows.flow_settings import DEFAULT_FLOW_SETTINGS, FlowSettings
from domain.flows.handoff import HandoffGuard
from domain.flows.mode_parts import CheckRun, FlowOutcome, ModeInputs, WorktreeRun
from domain.flows.models import AvailableModels
from domain.flows.roster import Roster
from domain.flows.sizing import check_parallel_sizing
from domain.flows.strategies import run_mode
from domain.flows.tools import bash_ro_enforcement
from domain.flows.trace_report import TraceReport

FLOWS_DIR = ".flows"


@attrs.frozen
class FlowContext:
    """Where and as what a call runs: the caller's directory (absolute), the model the run was
    started with, who can be asked to approve project files (the CLI: nobody, so they are
    refused unless the call waived it), and the home directory redaction shows as ``~``."""

    cwd: str
    session_model: str | None = None
    approve: Approver | None = None
    home: str | None = None
    # The Pi provider the children run on (``--provider``): the roster prefers its models.
    session_provider: str | None = None
    # Known inside a Pi session (its shim says): its thinking level, and what its own model
    # registry says this install can run. ``None``: the runner's model source is asked.
    session_thinking: str | None = None
    available_models: AvailableModels | None = None
    # Asks the person a yes/no question (a call's checkpoint); ``None``: nobody can be asked.
    confirm: Confirm | None = None

    @property
    def interactive(self) -> bool:
        return self.approve is not None


class FlowRunner:
    def __init__(
        self,
        *,
        runtime: ChildRuntime,
        agents: AgentDirectory,
        presets: PresetDirectory,
        fs: FileSystem,
        clock: Clock,
        ids: Ids,
        squad_root: str,
        isolation: IsolationSupport,
        attested: AttestedFlows | None = None,
        trace_sinks: TraceSinks | None = None,
        trace_defaults: TraceDefaults = NO_TRACE_DEFAULTS,
        bash_ro_allowlist: bool = False,
        flow_settings: FlowSettings = DEFAULT_FLOW_SETTINGS,
        models: ModelSource | None = None,
        checks: CheckRun | None = None,
        worktrees: WorktreeRun | None = None,
        git_range: GitRange | None = None,
    ) -> None:
        """``bash_ro_allowlist``: the children load pi-squad's extension, whose bridge screens a
        bash-ro child's commands. ``flow_settings``: pi-flows' ``PI_FLOWS_*`` settings as given,
        parsed at each call. ``models``: what the model roster is derived from (none: nothing
        is known, only ``capable`` resolves). ``checks``: runs a mode's check commands (none: a
        mode that needs one refuses)."""
        self._runtime = runtime
        self._agents = agents
        self._presets = presets
        self._fs = fs
        self._clock = clock
        self._ids = ids
        self._squad_root = squad_root
        self._isolation = isolation
        self._attested = attested
        self._checks = checks
        self._worktrees = worktrees
        self._reviews = CodeReviews(git_range, presets)
        self._trace_sinks = trace_sinks
        self._trace_defaults = trace_defaults
        self._bash_ro_allowlist = bash_ro_allowlist
        self._flow_settings = flow_settings
        self._models = models
        self._cancelled = threading.Event()
        self._dispatcher: ChildDispatcher | None = None

    def cancel(self) -> None:
        """Stop the running flow from another thread (the CLI's Ctrl+C): live children are
        killed, no further child spawns, and ``run`` returns the partial results."""
        self._cancelled.set()
        dispatcher = self._dispatcher
        if dispatcher is not None:
            dispatcher.cancel()

    def run(
        self,
        document: object,
        context: FlowContext,
        observer: Observer | None = None,
        activity: Activity | None = None,
        ceilings: Callable[[list[str]], None] | None = None,
    ) -> FlowReport:
        """Refusals raise ``FlowError`` before any child spawns; child failures are results.
        ``ceilings`` is told the call's budget lines once admitted, before the first child."""
        document, review = self._reviews.prepare(document, context.cwd)
        call, preset_files = expand_call(
            document, self._presets, context.cwd, interactive=context.interactive
        )
        flow_id = self._ids.uuid4_hex()[:16]
        if review is not None and review.pinned is None:
            return review.undispatched(flow_id, call)
        if call.mode is Mode.LIST:
            return FlowReport(
                flow_id, call, details=listing(call, self._agents, self._presets, context.cwd)
            )
        grace_ms = self._flow_settings.error_grace()
        switches = self._flow_settings.bash_ro_switches()
        if call.mode is Mode.SHOW_CONFIG:
            return FlowReport(
                flow_id, call, details=config_details(self._roster(context, ranked=True), grace_ms)
            )
        trace = open_trace(
            call,
            sinks=self._trace_sinks,
            defaults=self._trace_defaults,
            base_cwd=context.cwd,
            clock=self._clock,
            invocation_id=flow_id,
            home=context.home,
        )
        # An attested flow's children run the spec child's guard, not the bash-ro screen: their
        # read-only bash rests on the kernel alone (admission refuses it where there is none).
        allowlist = self._bash_ro_allowlist and call.spec is None
        try:
            # Before admission, which resolves each role with the task it will be given.
            call, wrappers = CallWrappers.read(call, self._fs, context.cwd, context.home, flow_id)
            check_parallel_sizing(call)
            # Only now: a call refused before admission never waits on Pi's model registry.
            catalog = self._agents.catalog(context.cwd)
            roster = self._roster(context, ranked=needs_registry(call, catalog))
            admitted = admit(
                call,
                catalog,
                self._fs,
                base_cwd=context.cwd,
                roster=roster.bindings,
                models=roster.known,
                session_model=context.session_model,
                session_provider=context.session_provider,
                isolation=self._isolation,
                interactive=context.interactive,
                bash_ro_allowlist=allowlist,
                bash_ro_switches=switches,
            )
            if strict(call, self._trace_defaults):
                strict_gate(trace, context.home)
            files = (*preset_files, *admitted.approvals)
            ask_approval(files, context.approve, trace, self._cancelled)
            wrappers = wrappers.asking(context.confirm, trace, self._cancelled)
            # An attested flow's brief is read and pinned before anything is written or spawned.
            attested = self._publish_brief(call, flow_id, context)
        except FlowError as error:
            if trace is not None:
                trace.refused(error)
            raise
        flow_dir = posixpath.join(self._squad_root, FLOWS_DIR, flow_id)
        self._fs.ensure_dir(flow_dir, SESSION_DIR_MODE)
        observer = self._admitted(flow_id, call, trace, observer)
        budgets = flow_budgets(call)
        if ceilings is not None and budgets.disclosure():
            ceilings(budgets.disclosure())
        dispatcher = ChildDispatcher(
            self._runtime,
            self._clock,
            self._fs,
            DispatchSettings(
                flow_id=flow_id,
                flow_dir=flow_dir,
                concurrency=call.concurrency,
                timeout_seconds=call.timeout_ms / 1000,
                squad_root=self._squad_root,
                bash_ro_enforcement=bash_ro_enforcement(
                    kernel=self._isolation.mode == "landlock",
                    allowlist=allowlist,
                    switches=switches,
                )
                or "",
                error_grace_seconds=grace_ms / 1000,
            ),
            resolve=admitted.resolve,
            observer=observer,
            activity=activity,
            cancelled=self._cancelled,
            # An attested flow's proof first, then each contracted run's return envelope.
            hooks=Hooks(
                *([attested] if attested is not None else []),
                ReturnCheck(call, self._fs, admitted.resolve, home=context.home),
            ),
            trace=trace,
            budgets=budgets,
        )
        self._dispatcher = dispatcher
        started = self._clock.monotonic()
        briefs = {entry.name: entry.definition.description for entry in admitted.catalog.enabled()}
        outcome, details = execute_mode(
            call,
            dispatcher,
            self._mode_inputs(call, briefs, context.cwd, context.confirm),
            attested=attested,
            trace=trace,
            home=context.home,
            was_cancelled=self._cancelled,
        )
        if review is not None:
            outcome, details = review.settle(outcome, details)
        if budgets.active:
            details["budget"] = budgets.document()
        denial = wrappers.settle(outcome, dispatcher.spawned, self._clock.now(), details)
        elapsed = max(0, round((self._clock.monotonic() - started) * 1000))
        if trace is not None:
            details["trace"] = close_trace(
                trace,
                outcome,
                elapsed,
                denial,
                strict_trace=strict(call, self._trace_defaults),
                was_cancelled=self._cancelled.is_set(),
            )
        if denial is not None:
            raise denial
        return FlowReport(
            flow_id, call, outcome, details=details, duration_ms=elapsed, home=context.home
        )

    def _admitted(
        self, flow_id: str, call: FlowCall, trace: FlowTrace | None, observer: Observer | None
    ) -> Observer | None:
        """The call is admitted and about to spawn: a subclass may watch its runs."""
        return observer

    def _roster(self, context: FlowContext, *, ranked: bool) -> Roster:
        """``ranked``: the call needs what Pi's registry knows (``flow_config.needs_registry``,
        or it shows the roster), worth asking it (about a second, headless)."""
        return call_roster(
            self._models,
            ask_registry=ranked,
            session_model=context.session_model,
            session_provider=context.session_provider,
            session_thinking=context.session_thinking,
            available=context.available_models,
        )

    def trace_report(self, path: str, cwd: str) -> TraceReport:
        """The report of a trace file (``/flows report``, ``pi-squad trace report``)."""
        return read_trace_report(self._fs, path, cwd=cwd)

    def _mode_inputs(
        self, call: FlowCall, briefs: Mapping[str, str], cwd: str, confirm: Confirm | None
    ) -> ModeInputs:
        """What a mode may use beyond the dispatch: ``briefs``, each agent's description in the
        call's scope (what a router is told of its candidates); ``cwd``, the context's."""
        flow_cwd = posixpath.normpath(posixpath.join(cwd, call.cwd or ""))
        # The wait between a monitor's probes watches the cancellation: Ctrl+C ends it at once.
        return ModeInputs(
            briefs,
            self._checks,
            cwd=flow_cwd,
            pause=lambda ms: not self._cancelled.wait(ms / 1000),
            worktrees=self._worktrees,
            # ``workflow``'s state file lives under the flow's directory; ``confirm`` asks.
            workflow=WorkflowFiles(self._fs, self._clock, flow_cwd, confirm),
        )

    def _publish_brief(
        self, call: FlowCall, flow_id: str, context: FlowContext
    ) -> AttestedRuns | None:
        if call.spec is None:
            return None
        if self._attested is None:
            raise refuse(ErrorCode.FLOW_INVALID, "$.spec", "attested flows are not available here")
        return self._attested.publish(
            call,
            flow_id=flow_id,
            cwd=context.cwd,
            squad_root=self._squad_root,
            level=self._isolation.level,
        )


def execute_mode(
    call: FlowCall,
    dispatcher: ChildDispatcher,
    inputs: ModeInputs,
    *,
    attested: AttestedRuns | None,
    trace: FlowTrace | None,
    home: str | None,
    was_cancelled: threading.Event,
) -> tuple[FlowOutcome, dict[str, Any]]:
    """The mode over the dispatcher (holding an attested flow's squad), and what the report
    adds of it; a cancelled flow's outcome says so."""
    # The one place data crosses between agents: the mode hands each output on through this
    # guard (docs/flows.md, "Handoff injection policy").
    guard = HandoffGuard.for_call(call, home=home)
    details: dict[str, Any] = {}
    try:
        if attested is None:
            outcome = run_mode(call, dispatcher, guard, inputs)
        else:
            with attested.driving():
                outcome = attested.finish(run_mode(call, dispatcher, guard, inputs))
            details["spec"] = attested.document()
    except BaseException:
        if trace is not None:
            trace.finish(status="crashed", elapsed_ms=0)
        raise
    if was_cancelled.is_set():
        outcome = cancelled(call, outcome)
    return outcome, details
