"""The worker side of the host (seed §8 ``run(job)``): starting ready attempts, admitting each
model request and each complete tool call before it happens, and publishing a result.

Every callback names its lease; a lease the state no longer holds (cancelled, expired,
navigated away, policy changed) is refused, so a late result is dropped (counted, its usage
still recorded, never published).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from application.delegation.ledger import (
    bound_source_ids,
    lease_of,
    log_event,
    release,
    settling,
    stop,
)
from application.ports import DelegationStore, WorkerLease, WorkerOutcome, WorkerStart
from domain.delegation.envelope import WORKER_TOOLS
from domain.delegation.lifecycle import Settlement, State, settle, transition
from domain.delegation.policy import Grant
from domain.delegation.receipts import host_check
from domain.delegation.result import judge_output
from domain.delegation.retry import (
    FailureClass,
    FailureKind,
    classify_failure,
    retry_decision,
)
from domain.delegation.session import Attempt, Batch, Job, ProcessRecord, SessionState


def start_ready(
    state: SessionState,
    grant: Grant,
    now_ms: int,
    revoked: list[WorkerLease],
    *,
    token: Callable[[], str],
    changed: Callable[[str], bool],
    host: ProcessRecord | None = None,
) -> list[WorkerStart]:
    """Queued attempts, oldest first, up to the concurrency grant (settling slots count);
    each rechecked right before it starts: batch not cancelled, same generations, every bound
    source still its captured bytes (the deadline was applied by the transaction)."""
    free = grant.session.max_active_jobs - settling(state)
    queued = sorted(
        (t for t in state.attempts() if t[2] is t[1].current and t[2].state is State.QUEUED),
        key=lambda t: t[2].queued_at_ms,
    )
    starts = []
    for batch, job, attempt in queued:
        envelope = attempt.envelope
        if (
            batch.cancelled
            or envelope.policy_generation != state.policy_generation
            or envelope.task_generation != state.task_generation
            or any(changed(source_id) for source_id in bound_source_ids(job, attempt))
        ):
            stop(
                state,
                batch,
                job,
                attempt,
                target=State.CANCELLED,
                reason="its grant, task or a bound source changed before it started",
                now_ms=now_ms,
                revoked=revoked,
            )
            continue
        if free <= 0:
            break
        free -= 1
        attempt.state = transition(attempt.state, State.RUNNING)
        attempt.settlement = settle(attempt.settlement, Settlement.IN_FLIGHT)
        attempt.lease = token()
        attempt.started_at_ms = now_ms
        # The process that will run the worker: recovery recognises its loss (recovery.py).
        attempt.host = host
        lease = lease_of(state, batch, job, attempt)
        assert lease is not None
        delay = max(0, (attempt.not_before_ms or now_ms) - now_ms)
        starts.append(WorkerStart(lease, envelope, envelope.packet_bytes(), delay_ms=delay))
    return starts


def start_failed(
    lease: WorkerLease,
    why: str,
    state: SessionState,
    _grant: Grant,
    now_ms: int,
    _revoked: list[WorkerLease],
) -> None:
    """The runtime could not start the worker (a transaction step): failed, settled."""
    found = state.find_attempt(lease.attempt_id)
    if found is None or found[2].lease != lease.token:
        return
    batch, job, attempt = found
    attempt.lease = None
    attempt.state = transition(attempt.state, State.FAILED)
    attempt.problem = f"the worker did not start ({why})"
    attempt.settlement = settle(attempt.settlement, Settlement.SETTLED)
    attempt.settled_at_ms = now_ms
    release(state, attempt)
    log_event(batch, job, attempt, now_ms)


def record_worker_process(state: SessionState, lease: WorkerLease, record: ProcessRecord) -> None:
    """The live attempt's worker process, for recovery if its host dies."""
    attempt = live_attempt(state, lease)
    if attempt is not None:
        attempt.worker = record


def live_attempt(state: SessionState, lease: WorkerLease) -> Attempt | None:
    found = state.find_attempt(lease.attempt_id)
    if found is None or found[2].lease != lease.token or found[2].state is not State.RUNNING:
        return None
    return found[2]


def admit_request(state: SessionState, lease: WorkerLease) -> bool:
    """One model request, debited before it is sent: refused once revoked or exhausted."""
    attempt = live_attempt(state, lease)
    if attempt is None or attempt.reserved < 1:
        return False
    attempt.reserved -= 1
    attempt.consumed += 1
    state.ledger.reserved -= 1
    state.ledger.consumed += 1
    return True


def admit_tool(state: SessionState, lease: WorkerLease, tool: str) -> tuple[bool, str]:
    """One complete tool call, checked right before it executes: the lease must be live, the
    tool in the closed broker, the tool counter not exhausted. Every decision is recorded."""
    attempt = live_attempt(state, lease)
    if attempt is None:
        return False, "the lease was revoked"
    if tool not in WORKER_TOOLS:
        decision = (False, f"tool {tool} is not granted")
    elif attempt.tool_calls >= attempt.envelope.limits.max_tool_calls:
        decision = (False, "the tool-call limit is reached")
    else:
        attempt.tool_calls += 1
        decision = (True, "allowed")
    attempt.tool_outcomes.append({"tool": tool, "allowed": decision[0], "reason": decision[1]})
    return decision


def _failure_kind(outcome: WorkerOutcome) -> FailureKind:
    if outcome.failure is not None:
        try:
            return FailureKind(outcome.failure)
        except ValueError:
            return FailureKind.OTHER
    if outcome.stop_reason == "error":
        return FailureKind.PROVIDER_ERROR
    if outcome.stop_reason == "aborted":
        return FailureKind.ABORTED
    return FailureKind.OTHER


def _classify_and_retry(
    batch: Batch,
    job: Job,
    attempt: Attempt,
    outcome: WorkerOutcome,
    *,
    now_ms: int,
    new_id: Callable[[str], str],
) -> Attempt | None:
    """A failed attempt is classified; a transient one becomes a new attempt under the same
    job (the same packet, a fresh worker), queued with what is left of the reservation, while
    the job's retries, requests and original deadline allow (domain/delegation/retry.py)."""
    kind = _failure_kind(outcome)
    responses = outcome.responses
    if responses is None:
        responses = sum(u.reported_calls for u in outcome.per_request)
    classification = classify_failure(
        kind, error_message=outcome.error_message, responses=responses
    )
    decision = retry_decision(
        classification,
        # Per job, follow-ups included: a follow-up starts no new allowance of retries.
        retries_so_far=sum(1 for a in job.attempts if a.retry_of is not None),
        requests_left=attempt.reserved,
        now_ms=now_ms,
        deadline_at_ms=job.limits.deadline_at_ms,
    )
    attempt.failure_kind = str(kind)
    attempt.failure_class = str(classification.failure_class)
    attempt.failure_reason = classification.reason
    attempt.error_message = (outcome.error_message or None) and outcome.error_message[:500]
    attempt.retry = decision.reason
    if classification.failure_class is FailureClass.TRANSIENT and not decision.retry:
        attempt.problem = f"{attempt.problem}; transient, {decision.reason}"
    if not decision.retry or batch.cancelled:
        return None
    retry = Attempt(
        attempt_id=new_id("a"),
        number=attempt.number + 1,
        envelope=attempt.envelope,
        packet_digest=attempt.packet_digest,
        state=State.QUEUED,
        settlement=Settlement.RESERVED,
        # The reservation moves intact to the retry (seed §7); the ledger is unchanged.
        reserved=attempt.reserved,
        queued_at_ms=now_ms,
        retry_of=attempt.attempt_id,
        not_before_ms=now_ms + decision.delay_ms,
        possible_duplicate_billing=classification.possible_duplicate_billing,
    )
    attempt.reserved = 0
    job.attempts.append(retry)
    return retry


def publish(
    state: SessionState,
    lease: WorkerLease,
    outcome: WorkerOutcome,
    store: DelegationStore,
    now_ms: int,
    *,
    new_id: Callable[[str], str] | None = None,
) -> dict[str, Any]:
    found = state.find_attempt(lease.attempt_id)
    if found is None:
        return {"published": False, "reason": "no such attempt"}
    batch, job, attempt = found
    attempt.usage.add(outcome.usage)  # failed and cancelled attempts' usage still counts
    attempt.request_usage.extend(outcome.per_request)
    attempt.provider_retries += outcome.provider_retries
    attempt.start_retries += outcome.start_retries
    if attempt.lease != lease.token or attempt.state is not State.RUNNING:
        attempt.late_results += 1
        if attempt.settlement is Settlement.UNCERTAIN:
            # The worker did finish: its resources are settled now, its result still dropped.
            attempt.settlement = settle(attempt.settlement, Settlement.SETTLED)
            attempt.settled_at_ms = now_ms
            release(state, attempt)
        return {"published": False, "reason": f"attempt is {attempt.state}: late result dropped"}
    sources = {s.source_id: s for s in attempt.envelope.sources}
    verdict = judge_output(
        raw=outcome.raw,
        overflow=outcome.overflow,
        stop_reason=outcome.stop_reason,
        max_output_bytes=attempt.envelope.limits.max_output_bytes,
        requirement_ids=job.requirement_ids,
        granted=sources,
        known_sources=frozenset(state.sources),
        source_bytes={
            sid: store.read_source(state.session, s.sha256) for sid, s in sources.items()
        },
        granted_receipts={r.receipt_id: r for r in attempt.envelope.receipts},
        known_receipts=frozenset(state.receipts),
    )
    if verdict.state is not State.FAILED and new_id is not None:
        # The check ran (a failed stop is not judged): its receipt a later job may cite.
        check = host_check(
            new_id("chk"),
            subject=attempt.attempt_id,
            outcome=str(verdict.state),
            checked=outcome.raw,
            checks=verdict.validation,
            # Every source the judged output rested on, those of its granted receipts too, so
            # a job citing this check goes stale when any of them changes (transitively).
            sources=_rested_on(attempt),
            receipt_ids=tuple(r.receipt_id for r in attempt.envelope.receipts),
            policy_generation=attempt.envelope.policy_generation,
            task_generation=attempt.envelope.task_generation,
            issued_at_ms=now_ms,
        )
        state.receipts[check.receipt_id] = check
        attempt.check_receipt = check.receipt_id
    attempt.lease = None
    attempt.state = transition(attempt.state, verdict.state)
    attempt.settlement = settle(attempt.settlement, Settlement.SETTLED)
    attempt.settled_at_ms = now_ms
    attempt.result = verdict.result
    attempt.validation = verdict.validation
    attempt.problem = verdict.problem if outcome.problem is None else outcome.problem
    attempt.correctable = verdict.correctable
    attempt.context_gap = verdict.context_gap
    attempt.stop_reason = outcome.stop_reason
    attempt.raw_bytes = max(len(outcome.raw), outcome.received_bytes or 0)
    attempt.retained_bytes = len(outcome.raw) if verdict.result is not None else 0
    attempt.overflow = outcome.overflow or verdict.validation.get("truncation") == "overflow"
    if verdict.state is State.FAILED and new_id is not None:
        retry = _classify_and_retry(batch, job, attempt, outcome, now_ms=now_ms, new_id=new_id)
        if retry is not None:
            # Nothing of the failed attempt is published: no event, the job stays pending
            # under its new attempt.
            return {"published": False, "retried": retry.attempt_id, "state": "queued"}
    release(state, attempt)
    log_event(batch, job, attempt, now_ms)
    return {"published": True, "state": str(attempt.state)}


def _rested_on(attempt: Attempt) -> tuple[tuple[str, str], ...]:
    """The (sourceId, sha256) pairs an attempt's output rested on: its own sources and every
    source its granted receipts are bound to, once each, in order."""
    pairs = [(s.source_id, s.sha256) for s in attempt.envelope.sources]
    for receipt in attempt.envelope.receipts:
        pairs.extend(receipt.sources)
    return tuple(dict.fromkeys(pairs))
