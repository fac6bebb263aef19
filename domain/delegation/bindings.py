"""Finding what a request names, and replaying what a key already did.

``bound`` refuses a binding that is not the job's exact current result (attempt, packet
digest, result revision, task generation): stale revisions are ``DELEGATE_BINDING_STALE``.
``idempotent`` keeps each keyed outcome for the session's lifetime: the same key with the same
request (its canonical digest) replays the recorded outcome and changes nothing; the same key
with a different request is ``DELEGATE_IDEMPOTENCY_CONFLICT``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from domain.delegation.canonical import canonical_digest
from domain.delegation.decision import Decision, unchanged
from domain.delegation.errors import DelegationError
from domain.delegation.policy import Grant
from domain.delegation.request import Binding
from domain.delegation.retention import PRUNED_NOTE
from domain.delegation.session import Batch, IdempotencyRecord, Job, SessionState
from domain.errors import ErrorCode


def _missing(what: str) -> DelegationError:
    return DelegationError(ErrorCode.DELEGATE_NOT_FOUND, what)


def locate(state: SessionState, batch_id: str, job_id: str | None) -> tuple[Batch, Job | None]:
    batch = state.batches.get(batch_id)
    if batch is None:
        raise _missing(f"batch {batch_id} is not in this session ({PRUNED_NOTE})")
    if job_id is None:
        return batch, None
    job = batch.job(job_id)
    if job is None:
        raise _missing(f"job {job_id} is not in batch {batch_id}")
    return batch, job


def bound(state: SessionState, binding: Binding) -> tuple[Batch, Job]:
    """The job a binding names, refused unless it is the exact current result."""
    batch, job = locate(state, binding.batch_id, binding.job_id)
    assert job is not None
    attempt = job.current
    stale = [
        name
        for name, ok in (
            ("attemptId", binding.attempt_id == attempt.attempt_id),
            ("packetDigest", binding.packet_digest == attempt.packet_digest),
            ("resultRevision", binding.result_revision == job.result_revision),
            ("taskGeneration", binding.task_generation == attempt.envelope.task_generation),
        )
        if not ok
    ]
    if stale:
        raise DelegationError(
            ErrorCode.DELEGATE_BINDING_STALE,
            f"{', '.join(stale)} do(es) not match job {job.job_id}'s current result "
            f"(attempt {attempt.attempt_id}, revision {job.result_revision}); collect again",
        )
    return batch, job


def idempotent(
    state: SessionState,
    grant: Grant,
    key: str | None,
    document: dict[str, Any],
    compute: Callable[[], Decision[dict[str, Any]]],
) -> Decision[dict[str, Any]]:
    if key is None:
        return compute()
    digest = canonical_digest(document)
    record = state.idempotency.get(key)
    if record is not None:
        if record.payload_digest != digest:
            raise DelegationError(
                ErrorCode.DELEGATE_IDEMPOTENCY_CONFLICT,
                f"idempotency key {key} was used with a different request",
            )
        return unchanged(state, {**record.outcome, "replayed": True})
    if len(state.idempotency) >= grant.session.max_idempotency_keys:
        raise DelegationError(
            ErrorCode.DELEGATE_CAPACITY_EXHAUSTED,
            f"the session has used {grant.session.max_idempotency_keys} idempotency keys",
        )
    decision = compute()
    record = IdempotencyRecord(str(document.get("op")), digest, decision.answer)
    return attrs.evolve(decision, state=decision.state.with_idempotency(key, record))
