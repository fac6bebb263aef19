"""A worker's tool decisions after the fact: a broker call admitted (``worker_side.admit_tool``)
and then refused by the broker when it ran is recorded as refused, so the receipt's
``toolOutcomes`` never lists a call the worker got no data from as allowed."""

from __future__ import annotations

import attrs

from domain.delegation.decision import Decision, unchanged
from domain.delegation.session import SessionState
from domain.delegation.worker_protocol import WorkerLease


def last_outcome_index(state: SessionState, lease: WorkerLease) -> int:
    """Where the attempt's most recent tool decision is recorded in its ``toolOutcomes``."""
    found = state.find_attempt(lease.attempt_id)
    return -1 if found is None else len(found[2].tool_outcomes) - 1


def refuse_served_call(
    state: SessionState, lease: WorkerLease, index: int, reason: str
) -> Decision[None]:
    """An admitted broker call (its decision at ``index`` in ``toolOutcomes``) the broker then
    refused when it ran: the outcome says refused, with the broker's reason, so the receipt
    never lists a call the worker got no data from as allowed."""
    found = state.find_attempt(lease.attempt_id)
    if found is None or not 0 <= index < len(found[2].tool_outcomes):
        return unchanged(state, None)
    attempt = found[2]
    outcomes = list(attempt.tool_outcomes)
    outcomes[index] = {**outcomes[index], "allowed": False, "reason": reason}
    attempt = attrs.evolve(attempt, tool_outcomes=tuple(outcomes))
    return unchanged(state.with_attempt(attempt), None)
