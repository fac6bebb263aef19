"""Bounded session retention (seed §2): a settled batch is kept for the session's ``retentionMs``
after its last change, then pruned, with the idempotency records that answered for it.

Every batch still held counts toward ``maxBatches`` (cancelled ones too), so the state a
transaction rewrites (every broker call is one) holds at most ``maxBatches`` batches of the
grant's bounded jobs and attempts, never the session's whole history. A batch with a worker
that may still hold provider resources (queued, running, settling or with a reservation) is
never pruned. Collecting a pruned batch is ``DELEGATE_NOT_FOUND``, which says so; within
retention, collect lists an expired payload under ``expired``.
"""

from __future__ import annotations

import attrs

from domain.delegation.lifecycle import ACTIVE, SETTLING
from domain.delegation.session import Batch, SessionState

PRUNED_NOTE = "settled batches are pruned once the session's retentionMs passes"


def settled(batch: Batch) -> bool:
    """No attempt of the batch is active, settling or holding a reservation."""
    return all(
        a.state not in ACTIVE and a.settlement not in SETTLING and a.reserved == 0
        for job in batch.jobs
        for a in job.attempts
    )


def last_change_ms(batch: Batch) -> int:
    """When the batch last changed: admission, a result event or a settlement."""
    times = [batch.admitted_at_ms, *(event.at_ms for event in batch.events)]
    times += [a.settled_at_ms for job in batch.jobs for a in job.attempts if a.settled_at_ms]
    return max(times)


def pruned(state: SessionState, retention_ms: int, now_ms: int) -> SessionState:
    """``state`` without its settled batches whose retention has passed."""
    gone = {
        batch_id
        for batch_id, batch in state.batches.items()
        if settled(batch) and now_ms - last_change_ms(batch) > retention_ms
    }
    if not gone:
        return state
    return attrs.evolve(
        state,
        batches={k: b for k, b in state.batches.items() if k not in gone},
        idempotency={
            key: record
            for key, record in state.idempotency.items()
            if record.outcome.get("batchId") not in gone
        },
    )


def next_prunable_in_ms(state: SessionState, retention_ms: int, now_ms: int) -> int | None:
    """How long until the earliest settled batch is pruned (``None``: none is settled)."""
    waits = [
        max(0, last_change_ms(b) + retention_ms + 1 - now_ms)
        for b in state.batches.values()
        if settled(b)
    ]
    return min(waits) if waits else None
