"""How a flow run ends: its budgets (the call's ceilings and each contract's own), the outcome
of a flow the caller cancelled, and its trace closed with that outcome."""

from __future__ import annotations

import attrs

from application.flows.budgets import FlowBudgets
from application.flows.contract_terms import contract_terms
from application.flows.trace_setup import incomplete
from application.flows.tracing import FlowTrace
from domain.flows.budget import Ceilings
from domain.flows.call import FlowCall, Mode
from domain.flows.errors import FlowError
from domain.flows.mode_parts import FlowOutcome, FlowStatus
from domain.flows.trace_spans import EventKind


def close_trace(
    trace: FlowTrace,
    outcome: FlowOutcome,
    elapsed_ms: int,
    denial: FlowError | None,
    *,
    strict_trace: bool,
    was_cancelled: bool,
) -> dict[str, object]:
    """The trace ended with the flow's outcome: its document, or ``TRACE_INCOMPLETE`` when a
    strict trace lost spans."""
    if was_cancelled:
        trace.event("flow.cancelled", EventKind.STATE, reason=outcome.summary)
    trace.outcome(outcome)
    health = trace.finish(
        status=str(outcome.status), elapsed_ms=elapsed_ms, results=outcome.results, error=denial
    )
    if strict_trace and not health.complete:
        raise incomplete(health)
    return trace.document(health)


def flow_budgets(call: FlowCall) -> FlowBudgets:
    """The call's ceilings; each contracted child is also held to its contract's own budget."""
    contracted = call.contract is not None or any(r.contract for _, r in call.roles())
    return FlowBudgets(
        Ceilings(call.max_cost_usd, call.max_tokens, call.max_generated_tokens),
        terms=contract_terms if contracted else None,
        chain=call.mode is Mode.CHAIN,
    )


def cancelled(call: FlowCall, outcome: FlowOutcome) -> FlowOutcome:
    """The outcome of a flow stopped by the caller: the runs that settled before it."""
    done = sum(result.ok for result in outcome.results)
    return attrs.evolve(
        outcome,
        status=FlowStatus.CANCELLED,
        summary=f"Flow {call.mode} cancelled: {done}/{len(outcome.results)} runs "
        "completed before it.",
    )
