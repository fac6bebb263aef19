"""Work taken back before it is done: the parent's ``cancel`` (seed §2) and task navigation
(a new task generation, docs/delegation.md "Navigation"). Each revokes the leases of the
attempts it stops; their workers are asked to stop after the transaction."""

from __future__ import annotations

from typing import Any

import attrs

from domain.delegation.bindings import locate
from domain.delegation.decision import Decision, unchanged
from domain.delegation.ledger import invalidate, stop
from domain.delegation.lifecycle import ACTIVE, State
from domain.delegation.session import SessionState


def cancel(
    state: SessionState, batch_id: str, job_id: str | None, now_ms: int
) -> Decision[dict[str, Any]]:
    """One job's active attempt, or every one of the batch and its admission, cancelled."""
    batch, only = locate(state, batch_id, job_id)
    if only is None:  # admission is revoked before anything is awaited
        state = state.with_batch(attrs.evolve(batch, cancelled=True))
    decision: Decision[None] = unchanged(state, None)
    cancelled = []
    for job in [only] if only is not None else batch.jobs:
        if job.current.state in ACTIVE:
            decision = decision.then(
                stop(
                    decision.state,
                    job.current.attempt_id,
                    target=State.CANCELLED,
                    reason="cancelled by the parent",
                    now_ms=now_ms,
                )
            )
            cancelled.append(job.job_id)
    answer = {"op": "cancel", "batchId": batch.batch_id, "cancelled": cancelled}
    return decision.then(unchanged(decision.state, answer))


def navigate(state: SessionState, now_ms: int, reason: str) -> Decision[int]:
    """The task changed: a new task generation, active work cancelled, ready results stale;
    the answer is the new generation."""
    state = attrs.evolve(state, task_generation=state.task_generation + 1)
    decision = invalidate(state, now_ms, f"task navigation: {reason}")
    return decision.then(unchanged(decision.state, decision.state.task_generation))
