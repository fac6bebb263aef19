"""The worker side of the host (seed §8 ``run(job)``): starting ready attempts, admitting each
model request and each complete tool call before it happens, and publishing a result.

Every callback names its lease; a lease the state no longer holds (cancelled, expired,
navigated away, policy changed) is refused, so a late result is dropped (counted, its usage
still recorded, never published).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from domain.delegation.decision import Decision, unchanged
from domain.delegation.envelope import WORKER_TOOLS
from domain.delegation.ledger import (
    bound_source_ids,
    lease_of,
    released,
    settled,
    settling,
    stop,
)
from domain.delegation.lifecycle import Settlement, State, settle, transition
from domain.delegation.policy import Grant
from domain.delegation.receipts import host_check
from domain.delegation.result import Verdict, judge_output
from domain.delegation.retry import (
    FailureClass,
    FailureKind,
    classify_failure,
    retry_decision,
)
from domain.delegation.session import Attempt, Job, ProcessRecord, SessionState
from domain.delegation.worker_protocol import WorkerLease, WorkerOutcome, WorkerStart

Answer = dict[str, Any]


def start_ready(
    state: SessionState,
    grant: Grant,
    now_ms: int,
    *,
    token: Callable[[], str],
    changed: Callable[[str], bool],
    host: ProcessRecord | None = None,
) -> Decision[list[WorkerStart]]:
    """Queued attempts, oldest first, up to the concurrency grant (settling slots count);
    each rechecked right before it starts: batch not cancelled, same generations, every bound
    source still its captured bytes (the deadline was applied by the transaction)."""
    free = grant.session.max_active_jobs - settling(state)
    queued = sorted(
        (t for t in state.current_attempts() if t[2].state is State.QUEUED),
        key=lambda t: t[2].queued_at_ms,
    )
    decision: Decision[None] = unchanged(state, None)
    starts = []
    for batch, job, queued_attempt in queued:
        envelope = queued_attempt.envelope
        if (
            batch.cancelled
            or envelope.policy_generation != state.policy_generation
            or envelope.task_generation != state.task_generation
            or any(changed(source_id) for source_id in bound_source_ids(job, queued_attempt))
        ):
            decision = decision.then(
                stop(
                    decision.state,
                    queued_attempt.attempt_id,
                    target=State.CANCELLED,
                    reason="its grant, task or a bound source changed before it started",
                    now_ms=now_ms,
                )
            )
            continue
        if free <= 0:
            break
        free -= 1
        attempt = attrs.evolve(
            queued_attempt,
            state=transition(queued_attempt.state, State.RUNNING),
            settlement=settle(queued_attempt.settlement, Settlement.IN_FLIGHT),
            lease=token(),
            started_at_ms=now_ms,
            # The process that will run the worker: recovery recognises its loss.
            host=host,
        )
        decision = attrs.evolve(decision, state=decision.state.with_attempt(attempt))
        lease = lease_of(decision.state, attempt)
        assert lease is not None
        delay = max(0, (attempt.not_before_ms or now_ms) - now_ms)
        starts.append(
            WorkerStart(
                lease,
                envelope,
                envelope.packet_bytes(),
                delay_ms=delay,
                requests=queued_attempt.reserved,
            )
        )
    return decision.then(unchanged(decision.state, starts))


def start_failed(state: SessionState, lease: WorkerLease, why: str, now_ms: int) -> Decision[None]:
    """The runtime could not start the worker: failed, settled."""
    found = state.find_attempt(lease.attempt_id)
    if found is None or found[2].lease != lease.token:
        return unchanged(state, None)
    attempt = found[2]
    attempt = attrs.evolve(
        attempt,
        lease=None,
        state=transition(attempt.state, State.FAILED),
        problem=f"the worker did not start ({why})",
    )
    state, attempt = settled(state, attempt, now_ms)
    return unchanged(state.with_event(attempt, now_ms), None)


def live_attempt(state: SessionState, lease: WorkerLease) -> Attempt | None:
    found = state.find_attempt(lease.attempt_id)
    if found is None or found[2].lease != lease.token or found[2].state is not State.RUNNING:
        return None
    return found[2]


def record_worker_process(
    state: SessionState, lease: WorkerLease, record: ProcessRecord
) -> Decision[None]:
    """The live attempt's worker process, for recovery if its host dies."""
    attempt = live_attempt(state, lease)
    if attempt is None:
        return unchanged(state, None)
    return unchanged(state.with_attempt(attrs.evolve(attempt, worker=record)), None)


def admit_request(state: SessionState, lease: WorkerLease) -> Decision[bool]:
    """One model request, debited before it is sent: refused once revoked or exhausted."""
    attempt = live_attempt(state, lease)
    if attempt is None:
        return unchanged(state, False)
    if attempt.reserved < 1:
        # Recorded, so the host that sees the worker die knows the refusal stopped it.
        refused = attrs.evolve(attempt, requests_refused=attempt.requests_refused + 1)
        return Decision(state.with_attempt(refused), False)
    attempt = attrs.evolve(attempt, reserved=attempt.reserved - 1, consumed=attempt.consumed + 1)
    state = state.with_ledger(state.ledger.consume_reserved()).with_attempt(attempt)
    return unchanged(state, True)


def refuse_tool(
    state: SessionState, attempt: Attempt, tool: str, reason: str
) -> Decision[tuple[bool, str]]:
    """A tool call refused, the refusal recorded in the attempt's ``toolOutcomes``."""
    return _tool_decided(state, attempt, tool, (False, reason))


def admit_tool(state: SessionState, lease: WorkerLease, tool: str) -> Decision[tuple[bool, str]]:
    """One complete tool call, checked right before it executes: the lease must be live, the
    tool in the closed broker, the tool counter not exhausted. Every decision is recorded."""
    attempt = live_attempt(state, lease)
    if attempt is None:
        return unchanged(state, (False, "the lease was revoked"))
    if tool not in WORKER_TOOLS:
        return refuse_tool(state, attempt, tool, f"tool {tool} is not granted")
    if attempt.tool_calls >= attempt.envelope.limits.max_tool_calls:
        return refuse_tool(state, attempt, tool, "the tool-call limit is reached")
    attempt = attrs.evolve(attempt, tool_calls=attempt.tool_calls + 1)
    return _tool_decided(state, attempt, tool, (True, "allowed"))


def _tool_decided(
    state: SessionState, attempt: Attempt, tool: str, decision: tuple[bool, str]
) -> Decision[tuple[bool, str]]:
    outcome = {"tool": tool, "allowed": decision[0], "reason": decision[1]}
    attempt = attrs.evolve(attempt, tool_outcomes=(*attempt.tool_outcomes, outcome))
    return unchanged(state.with_attempt(attempt), decision)


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


def _classified(
    job: Job,
    attempt: Attempt,
    outcome: WorkerOutcome,
    *,
    cancelled: bool,
    now_ms: int,
    new_id: Callable[[str], str],
) -> tuple[Attempt, Attempt | None]:
    """A failed attempt classified, and its host retry if it gets one: a transient failure
    becomes a new attempt under the same job (the same packet, a fresh worker), queued with
    what is left of the reservation, while the job's retries, requests and original deadline
    allow (domain/delegation/retry.py)."""
    kind = _failure_kind(outcome)
    responses = outcome.responses
    if responses is None:
        responses = sum(u.turns for u in outcome.per_request)
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
    problem = attempt.problem
    if classification.failure_class is FailureClass.TRANSIENT and not decision.retry:
        problem = f"{attempt.problem}; transient, {decision.reason}"
    attempt = attrs.evolve(
        attempt,
        failure_kind=str(kind),
        failure_class=str(classification.failure_class),
        failure_reason=classification.reason,
        error_message=(outcome.error_message or None) and outcome.error_message[:500],
        retry=decision.reason,
        problem=problem,
    )
    if not decision.retry or cancelled:
        return attempt, None
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
    return attrs.evolve(attempt, reserved=0), retry


def _judged(attempt: Attempt, verdict: Verdict, outcome: WorkerOutcome, now_ms: int) -> Attempt:
    """The attempt as its worker's output was judged: no longer leased, settled."""
    return attrs.evolve(
        attempt,
        lease=None,
        state=transition(attempt.state, verdict.state),
        settlement=settle(attempt.settlement, Settlement.SETTLED),
        settled_at_ms=now_ms,
        result=verdict.result,
        validation=verdict.validation,
        problem=verdict.problem if outcome.problem is None else outcome.problem,
        correctable=verdict.correctable,
        context_gap=verdict.context_gap,
        stop_reason=outcome.stop_reason,
        raw_bytes=max(len(outcome.raw), outcome.received_bytes or 0),
        retained_bytes=len(outcome.raw) if verdict.result is not None else 0,
        overflow=outcome.overflow or verdict.validation.get("truncation") == "overflow",
    )


def _late(state: SessionState, attempt: Attempt, now_ms: int) -> Decision[Answer]:
    """A report under a revoked lease: counted, never published."""
    attempt = attrs.evolve(attempt, late_results=attempt.late_results + 1)
    if attempt.settlement is Settlement.UNCERTAIN:
        # The worker did finish: its resources are settled now, its result still dropped.
        state, attempt = settled(state, attempt, now_ms)
    answer = {"published": False, "reason": f"attempt is {attempt.state}: late result dropped"}
    return unchanged(state.with_attempt(attempt), answer)


def _stopped_by_refusal(attempt: Attempt, outcome: WorkerOutcome) -> WorkerOutcome:
    """A worker that exited after a refused request: its shim killed it for the refusal, so
    it stopped at the request limit, never a transient exit to retry."""
    if outcome.failure != FailureKind.EXITED or attempt.requests_refused < 1:
        return outcome
    return attrs.evolve(
        outcome,
        stop_reason="aborted",
        failure=str(FailureKind.REQUEST_LIMIT),
        problem="the model-request limit is reached: the worker was stopped before its "
        "next request left",
    )


def publish(
    state: SessionState,
    lease: WorkerLease,
    outcome: WorkerOutcome,
    now_ms: int,
    *,
    read_source: Callable[[str], bytes],
    new_id: Callable[[str], str] | None = None,
) -> Decision[Answer]:
    """A worker's final output, judged and published while its lease is live.
    ``read_source``: a captured snapshot's bytes by SHA-256 (the store's, re-hashed)."""
    found = state.find_attempt(lease.attempt_id)
    if found is None:
        return unchanged(state, {"published": False, "reason": "no such attempt"})
    batch, job, attempt = found
    outcome = _stopped_by_refusal(attempt, outcome)
    state, attempt = _counted(state, attempt, outcome.requests or 0)
    # Failed and cancelled attempts' usage still counts.
    attempt = attrs.evolve(
        attempt,
        usage=attempt.usage.plus(outcome.usage),
        request_usage=(*attempt.request_usage, *outcome.per_request),
        provider_retries=attempt.provider_retries + outcome.provider_retries,
        start_retries=attempt.start_retries + outcome.start_retries,
    )
    if attempt.lease != lease.token or attempt.state is not State.RUNNING:
        return _late(state, attempt, now_ms)
    sources = {s.source_id: s for s in attempt.envelope.sources}
    verdict = judge_output(
        raw=outcome.raw,
        overflow=outcome.overflow,
        stop_reason=outcome.stop_reason,
        max_output_bytes=attempt.envelope.limits.max_output_bytes,
        requirement_ids=job.requirement_ids,
        granted=sources,
        known_sources=frozenset(state.sources),
        source_bytes={sid: read_source(s.sha256) for sid, s in sources.items()},
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
        state = state.with_receipt(check)
        attempt = attrs.evolve(attempt, check_receipt=check.receipt_id)
    attempt = _judged(attempt, verdict, outcome, now_ms)
    if verdict.state is State.FAILED and new_id is not None:
        attempt, retry = _classified(
            job, attempt, outcome, cancelled=batch.cancelled, now_ms=now_ms, new_id=new_id
        )
        if retry is not None:
            # Nothing of the failed attempt is published: no event, the job stays pending
            # under its new attempt.
            state = state.with_attempt(attempt)
            state = state.with_job(
                batch.batch_id, state.found(attempt.attempt_id)[1].with_attempt(retry)
            )
            return unchanged(
                state, {"published": False, "retried": retry.attempt_id, "state": "queued"}
            )
    state, attempt = released(state, attempt)
    return unchanged(
        state.with_event(attempt, now_ms), {"published": True, "state": str(attempt.state)}
    )


def _counted(state: SessionState, attempt: Attempt, seen: int) -> tuple[SessionState, Attempt]:
    """Requests the runtime saw reach the provider beyond those admitted (a refused one, a
    compaction): consumed all the same, from the attempt's reservation while it lasts, past
    the allowance after that (the ledger shows the overdraft rather than hide it)."""
    extra = seen - attempt.consumed
    if extra <= 0:
        return state, attempt
    held = min(extra, attempt.reserved)
    ledger = state.ledger
    ledger = attrs.evolve(ledger, reserved=ledger.reserved - held, consumed=ledger.consumed + extra)
    attempt = attrs.evolve(
        attempt, reserved=attempt.reserved - held, consumed=attempt.consumed + extra
    )
    return state.with_ledger(ledger), attempt


def _rested_on(attempt: Attempt) -> tuple[tuple[str, str], ...]:
    """The (sourceId, sha256) pairs an attempt's output rested on: its own sources and every
    source its granted receipts are bound to, once each, in order."""
    pairs = [(s.source_id, s.sha256) for s in attempt.envelope.sources]
    for receipt in attempt.envelope.receipts:
        pairs.extend(receipt.sources)
    return tuple(dict.fromkeys(pairs))
