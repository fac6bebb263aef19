"""Which strategy runs each spawning mode, and the final answers it leaves for the caller."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs

from domain.flows.call import FlowCall, Mode
from domain.flows.handoff import HandoffGuard
from domain.flows.judging import run_loop, run_route
from domain.flows.mode_parts import FlowOutcome, ModeInputs
from domain.flows.modes import run_chain, run_graph, run_parallel, run_single
from domain.flows.orchestrating import run_orchestrate
from domain.flows.panel import run_debate, run_vote
from domain.flows.refining import run_evaluate
from domain.flows.runs import Dispatch
from domain.flows.searching import run_search
from domain.flows.watching import run_dossier, run_monitor
from domain.flows.workflow import run_workflow
from domain.flows.worktree import run_worktree

# A mode's strategy: the call, the dispatch seam, the handoff guard, and what else it may use.
Strategy = Callable[[FlowCall, Dispatch, HandoffGuard, ModeInputs], FlowOutcome]


def _plain(
    run: Callable[[FlowCall, Dispatch, HandoffGuard], FlowOutcome],
) -> Strategy:
    """A strategy that needs nothing beyond the dispatch and the guard."""
    return lambda call, dispatch, guard, _inputs: run(call, dispatch, guard)


STRATEGIES: Mapping[Mode, Strategy] = {
    Mode.SINGLE: _plain(run_single),
    Mode.PARALLEL: _plain(run_parallel),
    Mode.CHAIN: _plain(run_chain),
    Mode.GRAPH: _plain(run_graph),
    Mode.ROUTE: run_route,
    Mode.LOOP: run_loop,
    Mode.EVALUATE: run_evaluate,
    Mode.SEARCH: run_search,
    Mode.VOTE: run_vote,
    Mode.DEBATE: run_debate,
    Mode.DOSSIER: run_dossier,
    Mode.MONITOR: run_monitor,
    Mode.ORCHESTRATE: run_orchestrate,
    Mode.WORKFLOW: run_workflow,
    Mode.WORKTREE: run_worktree,
}


def run_mode(
    call: FlowCall,
    dispatch: Dispatch,
    guard: HandoffGuard,
    inputs: ModeInputs | None = None,
) -> FlowOutcome:
    """The call's mode run, then every final answer the caller reads (a run whose output was
    handed to no agent) scanned and recorded when flagged: exempt from the policy, since the
    caller is not another agent, but visible."""
    outcome = STRATEGIES[call.mode](call, dispatch, guard, inputs or ModeInputs())
    sources = {record.source for record in outcome.handoffs}
    exempt = [
        guard.inspect(result.key, result.output)
        for result in outcome.results
        if result.ok and result.output and result.key not in sources
    ]
    found = tuple(record for record in exempt if record is not None)
    return attrs.evolve(outcome, handoffs=outcome.handoffs + found) if found else outcome
