"""``collect`` (seed §2): payloads after a cursor, without a destructive dequeue.

``afterCursor`` is the caller's acknowledgment: it is recorded (never lowered) and nothing at
or before it is returned. The response's ``collectionCursor`` does not acknowledge anything, so
a response lost before it was read is recovered by repeating the same cursor. A payload is
retained until its job is resolved (and acknowledged) or the session's retention passes; one no
longer retained is listed under ``expired`` with its reason, never silently left out.
"""

from __future__ import annotations

from typing import Any

import attrs

from domain.delegation.decision import Decision, unchanged
from domain.delegation.errors import DelegationError
from domain.delegation.lifecycle import State
from domain.delegation.policy import Grant
from domain.delegation.request import CollectRequest
from domain.delegation.retention import PRUNED_NOTE
from domain.delegation.session import SessionState
from domain.delegation.views import payload
from domain.errors import ErrorCode

RESOLVED = frozenset({State.ACCEPTED, State.DISCARDED})


def collect_once(
    state: SessionState, grant: Grant, request: CollectRequest, now_ms: int
) -> Decision[dict[str, Any]]:
    batch = state.batches.get(request.batch_id)
    if batch is None:
        raise DelegationError(
            ErrorCode.DELEGATE_NOT_FOUND,
            f"batch {request.batch_id} is not in this session ({PRUNED_NOTE})",
        )
    wanted = set(request.job_ids)
    unknown = sorted(wanted - {job.job_id for job in batch.jobs})
    if unknown:
        raise DelegationError(
            ErrorCode.DELEGATE_NOT_FOUND, f"job {unknown[0]} is not in batch {batch.batch_id}"
        )
    after = request.after_cursor or 0
    if after > batch.cursor():
        raise DelegationError(
            ErrorCode.DELEGATE_CURSOR_INVALID,
            f"$.afterCursor: {after} is beyond the batch's collection cursor {batch.cursor()}",
        )
    if request.after_cursor is not None:
        batch = attrs.evolve(batch, acknowledged=max(batch.acknowledged, request.after_cursor))
        state = state.with_batch(batch)
    latest: dict[str, int] = {}
    for event in batch.events:
        if event.position > after and (not wanted or event.job_id in wanted):
            latest[event.job_id] = event.position
    items: list[dict[str, Any]] = []
    expired: list[dict[str, Any]] = []
    for job in batch.jobs:
        if job.job_id not in latest:
            continue
        attempt = job.current
        event = next(e for e in batch.events if e.position == latest[job.job_id])
        if now_ms - event.at_ms > grant.session.retention_ms:
            expired.append(
                {
                    "jobId": job.job_id,
                    "attemptId": attempt.attempt_id,
                    "reason": "session retention passed",
                }
            )
        elif attempt.state in RESOLVED and event.position <= batch.acknowledged:
            expired.append(
                {
                    "jobId": job.job_id,
                    "attemptId": attempt.attempt_id,
                    "reason": f"resolved ({attempt.state}) and acknowledged",
                }
            )
        else:
            items.append({"position": event.position, **payload(batch, job, attempt)})
    answer = {
        "op": "collect",
        "batchId": batch.batch_id,
        "afterCursor": after,
        "collectionCursor": batch.cursor(),
        "acknowledgedCursor": batch.acknowledged,
        "items": items,
        "expired": expired,
        "pending": [
            job.job_id for job in batch.jobs if job.current.state in (State.QUEUED, State.RUNNING)
        ],
    }
    return unchanged(state, answer)
