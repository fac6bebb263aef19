"""Admission (seed §8 ``admit``): validate against the grant, bind generations and sources,
deduplicate exact active equivalents, reserve capacity, enqueue. Decided inside the session's
transaction, so the check and the reservation are one atomic step: two simultaneous
admissions against one reservation cannot both pass."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs

from domain.delegation.decision import Decision, unchanged
from domain.delegation.envelope import (
    EffectiveLimits,
    Envelope,
    ModelRoute,
    PriorAttempt,
    SourceDescriptor,
    TaskContent,
    dedup_key,
)
from domain.delegation.errors import DelegationError
from domain.delegation.lifecycle import Settlement, State, transition
from domain.delegation.policy import Grant
from domain.delegation.receipts import EvidenceReceipt
from domain.delegation.request import FollowUpRequest, RunRequest
from domain.delegation.retention import PRUNED_NOTE, next_prunable_in_ms, pruned
from domain.delegation.session import Attempt, Batch, Job, SessionState
from domain.errors import ErrorCode

_Issued = TypeVar("_Issued")

DEDUP_STATES = frozenset({State.QUEUED, State.RUNNING, State.READY})


def _denied(message: str) -> DelegationError:
    return DelegationError(ErrorCode.DELEGATE_POLICY_DENIED, message)


def _exhausted(message: str) -> DelegationError:
    return DelegationError(ErrorCode.DELEGATE_CAPACITY_EXHAUSTED, message)


def effective_limits(request: RunRequest, grant: Grant, now_ms: int) -> EffectiveLimits:
    """The request's limits, each at most the grant's: asking for more is refused."""
    asked = request.limits
    output = asked.max_output_bytes or grant.job.max_output_bytes
    for name, value, allowed in (
        ("maxRequests", asked.max_requests, grant.job.max_requests),
        ("deadlineMs", asked.deadline_ms, grant.job.deadline_ms),
        ("maxOutputBytes", output, grant.job.max_output_bytes),
    ):
        if value > allowed:
            raise _denied(f"$.limits.{name}: {value} asked; the grant allows at most {allowed}")
    return EffectiveLimits(
        max_requests=asked.max_requests,
        deadline_ms=asked.deadline_ms,
        max_output_bytes=output,
        max_tool_calls=grant.job.max_tool_calls,
        deadline_at_ms=now_ms + asked.deadline_ms,
    )


def bound_sources(
    state: SessionState, source_ids: tuple[str, ...], where: str
) -> tuple[SourceDescriptor, ...]:
    """Only IDs the capture interface issued in this session; an invented ID is refused."""
    records = _issued(source_ids, state.sources, where, "source", "was not issued by capture")
    return tuple(record.descriptor for record in records)


def bound_receipts(
    state: SessionState, receipt_ids: tuple[str, ...], where: str
) -> tuple[EvidenceReceipt, ...]:
    """Only receipts the host issued in this session (a parent observation registered through
    ``capture``, or a host check); an invented ID is refused as an unknown source is."""
    return _issued(receipt_ids, state.receipts, where, "receipt", "was not issued")


def _issued(
    ids: tuple[str, ...], issued: Mapping[str, _Issued], where: str, noun: str, refusal: str
) -> tuple[_Issued, ...]:
    found = []
    for index, issued_id in enumerate(ids):
        record = issued.get(issued_id)
        if record is None:
            raise DelegationError(
                ErrorCode.DELEGATE_SOURCE_UNKNOWN,
                f"{where}[{index}]: {noun} {issued_id} {refusal} in this session",
            )
        found.append(record)
    return tuple(found)


def _check_grant(request: RunRequest, grant: Grant, state: SessionState, now_ms: int) -> None:
    if len(request.jobs) > grant.batch.max_jobs:
        raise _denied(
            f"$.jobs: {len(request.jobs)} jobs asked; a batch may have {grant.batch.max_jobs}"
        )
    keys = [job.key for job in request.jobs]
    if len(set(keys)) != len(keys):
        raise DelegationError(ErrorCode.DELEGATE_INVALID, "$.jobs: job keys must be unique")
    requirement_ids = [r.id for r in request.requirements]
    if len(set(requirement_ids)) != len(requirement_ids):
        raise DelegationError(ErrorCode.DELEGATE_INVALID, "$.requirements: ids must be unique")
    for index, job in enumerate(request.jobs):
        if job.mode not in grant.modes:
            raise _denied(f"$.jobs[{index}].mode: {job.mode} is not a granted mode")
        unknown = [rid for rid in job.requirements if rid not in requirement_ids]
        if unknown:
            raise DelegationError(
                ErrorCode.DELEGATE_INVALID,
                f"$.jobs[{index}].requirements: {unknown[0]} is not in $.requirements",
            )
    if len(state.batches) >= grant.session.max_batches:
        raise _exhausted(_batches_full(state, grant, now_ms))


def _batches_full(state: SessionState, grant: Grant, now_ms: int) -> str:
    """Every batch held counts, cancelled or settled: when the oldest settled one is pruned."""
    held = len(state.batches)
    wait = next_prunable_in_ms(state, grant.session.retention_ms, now_ms)
    when = (
        "none is settled yet: cancel or finish one first"
        if wait is None
        else f"the first settled one is pruned in {wait} ms ({PRUNED_NOTE})"
    )
    return (
        f"the session holds {held} batches; maxBatches allows {grant.session.max_batches}: {when}"
    )


def admit_run(
    state: SessionState,
    request: RunRequest,
    *,
    grant: Grant,
    now_ms: int,
    new_id: Callable[[str], str],
    route: ModelRoute,
) -> Decision[dict[str, Any]]:
    state = pruned(state, grant.session.retention_ms, now_ms)
    _check_grant(request, grant, state, now_ms)
    limits = effective_limits(request, grant, now_ms)
    batch_id = new_id("b")
    requirements = {r.id: r.text for r in request.requirements}
    active = {
        job.dedup_key: (batch.batch_id, job)
        for batch, job, attempt in state.attempts()
        if attempt is job.current and attempt.state in DEDUP_STATES
    }
    rows: list[dict[str, Any]] = []
    fresh: list[Job] = []
    for index, proposal in enumerate(request.jobs):
        sources = bound_sources(state, proposal.source_ids, f"$.jobs[{index}].sourceIds")
        receipts = bound_receipts(state, proposal.receipt_ids, f"$.jobs[{index}].receiptIds")
        task = TaskContent(
            objective=request.objective,
            mode=proposal.mode,
            question=proposal.question,
            acceptance=proposal.acceptance,
            decisions=proposal.decisions,
            non_goals=proposal.non_goals,
            independence=proposal.independence,
            parent_alternative=proposal.parent_alternative,
            reason=proposal.reason,
            requirements=tuple((rid, requirements[rid]) for rid in proposal.requirements),
        )
        envelope = Envelope(
            batch_id,
            new_id("j"),
            new_id("a"),
            state.policy_generation,
            state.task_generation,
            route,
            limits,
            task,
            sources,
            receipts=receipts,
        )
        key = dedup_key(envelope)
        if key in active:
            old_batch_id, old_job = active[key]
            rows.append(
                {
                    "key": proposal.key,
                    "batchId": old_batch_id,
                    "jobId": old_job.job_id,
                    "attemptId": old_job.current.attempt_id,
                    "deduplicated": True,
                }
            )
            continue
        attempt = Attempt(
            attempt_id=envelope.attempt_id,
            number=1,
            envelope=envelope,
            packet_digest=envelope.packet_digest(),
            state=State.PROPOSED,
            settlement=Settlement.RESERVED,
            reserved=limits.max_requests,
            queued_at_ms=now_ms,
        )
        job = Job(
            job_id=envelope.job_id,
            key=proposal.key,
            mode=proposal.mode,
            dedup_key=key,
            requirement_ids=proposal.requirements,
            source_ids=proposal.source_ids,
            limits=limits,
            attempts=(attempt,),
        )
        active[key] = (batch_id, job)
        fresh.append(job)
        rows.append(
            {
                "key": proposal.key,
                "batchId": batch_id,
                "jobId": job.job_id,
                "attemptId": attempt.attempt_id,
                "packetDigest": attempt.packet_digest,
                "deduplicated": False,
            }
        )
    needed = limits.max_requests * len(fresh)
    if needed > grant.batch.max_requests:
        raise _exhausted(
            f"the batch would reserve {needed} model requests; a batch may reserve "
            f"{grant.batch.max_requests}"
        )
    if needed > state.ledger.free():
        raise _exhausted(
            f"the batch would reserve {needed} model requests; the session allowance has "
            f"{state.ledger.free()} left ({state.ledger.consumed} consumed, "
            f"{state.ledger.reserved} reserved); only a person renews it "
            f"(`pi-squad delegate renew --session {state.session}`)"
        )
    outcome: dict[str, Any] = {
        "op": "run",
        "batchId": batch_id if fresh else rows[0]["batchId"],
        "jobs": rows,
        "effectiveLimits": limits.document(),
        "policyGeneration": state.policy_generation,
        "taskGeneration": state.task_generation,
    }
    if not fresh:
        return unchanged(state, outcome)
    batch = Batch(
        batch_id,
        request.objective,
        now_ms,
        state.policy_generation,
        state.task_generation,
        tuple(job.with_attempt(_queued(job.current)) for job in fresh),
    )
    state = state.with_ledger(state.ledger.reserve(needed)).with_batch(batch)
    return unchanged(state, outcome)


def _queued(attempt: Attempt) -> Attempt:
    return attrs.evolve(attempt, state=transition(attempt.state, State.QUEUED))


def admit_follow_up(
    state: SessionState,
    request: FollowUpRequest,
    *,
    batch: Batch,
    job: Job,
    grant: Grant,
    now_ms: int,
    new_id: Callable[[str], str],
) -> Decision[dict[str, Any]]:
    """One more immutable attempt under the same job: only from ``incomplete`` with a context
    gap or ``invalid`` with a correctable format error, after the prior attempt settled, under
    the job's original deadline and request counter, at most once per job."""
    prior = job.current
    wanted = {"context_gap": State.INCOMPLETE, "format_error": State.INVALID}[request.addresses]
    if prior.state is not wanted:
        raise DelegationError(
            ErrorCode.DELEGATE_STATE_REFUSED,
            f"follow_up addressing {request.addresses} needs a {wanted} result; attempt "
            f"{prior.attempt_id} is {prior.state}",
        )
    if wanted is State.INCOMPLETE and not prior.context_gap:
        raise DelegationError(
            ErrorCode.DELEGATE_STATE_REFUSED, "the incomplete result names no context gap"
        )
    if wanted is State.INVALID and not prior.correctable:
        raise DelegationError(
            ErrorCode.DELEGATE_STATE_REFUSED,
            "the invalid result is not a correctable format error; submit a new run",
        )
    if prior.settlement is not Settlement.SETTLED:
        raise DelegationError(
            ErrorCode.DELEGATE_STATE_REFUSED,
            f"attempt {prior.attempt_id}'s provider resources are {prior.settlement}, not settled",
        )
    if job.follow_ups >= 1:
        raise _exhausted(f"job {job.job_id} already had its one follow-up")
    if batch.cancelled:
        raise DelegationError(ErrorCode.DELEGATE_STATE_REFUSED, "the batch was cancelled")
    if now_ms >= job.limits.deadline_at_ms:
        raise _exhausted(f"job {job.job_id}'s deadline has passed; a follow-up never extends it")
    if prior.envelope.policy_generation != state.policy_generation:
        raise DelegationError(
            ErrorCode.DELEGATE_BINDING_STALE, "the policy changed since the job was admitted"
        )
    if job.mode not in grant.modes:
        raise _denied(f"mode {job.mode} is no longer granted")
    remaining = job.limits.max_requests - job.consumed()
    if remaining < 1:
        raise _exhausted(f"job {job.job_id} used all {job.limits.max_requests} model requests")
    if remaining > state.ledger.free():
        raise _exhausted(f"the session allowance has {state.ledger.free()} requests left")
    added = bound_sources(state, request.source_ids, "$.sourceIds")
    sources = prior.envelope.sources + tuple(s for s in added if s not in prior.envelope.sources)
    envelope = Envelope(
        batch.batch_id,
        job.job_id,
        new_id("a"),
        prior.envelope.policy_generation,
        prior.envelope.task_generation,
        prior.envelope.model_route,
        job.limits,
        prior.envelope.task,
        sources,
        PriorAttempt(
            prior.attempt_id,
            str(prior.state),
            request.addresses,
            request.correction,
            tuple(s.source_id for s in added),
        ),
        receipts=prior.envelope.receipts,
    )
    attempt = Attempt(
        attempt_id=envelope.attempt_id,
        number=prior.number + 1,
        envelope=envelope,
        packet_digest=envelope.packet_digest(),
        state=State.PROPOSED,
        settlement=Settlement.RESERVED,
        reserved=remaining,
        queued_at_ms=now_ms,
    )
    followed = attrs.evolve(
        job.with_attempt(_queued(attempt)),
        source_ids=tuple(s.source_id for s in sources),
        follow_ups=job.follow_ups + 1,
    )
    state = state.with_ledger(state.ledger.reserve(remaining)).with_job(batch.batch_id, followed)
    answer = {
        "op": "follow_up",
        "batchId": batch.batch_id,
        "jobId": job.job_id,
        "attemptId": attempt.attempt_id,
        "packetDigest": attempt.packet_digest,
        "priorAttemptId": prior.attempt_id,
        "reserved": remaining,
        "deadlineAtMs": job.limits.deadline_at_ms,
    }
    return unchanged(state, answer)
