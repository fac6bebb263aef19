"""Shared steps of every delegation transaction: a session's state created or brought to the
current grant, deadlines and staleness applied, leases revoked, events logged, reservations
released. Pure over the state; the host supplies time and ids."""

from __future__ import annotations

from collections.abc import Callable

from application.ports import WorkerLease
from domain.delegation.lifecycle import ACTIVE, Settlement, State, settle, transition
from domain.delegation.policy import Grant
from domain.delegation.session import (
    Attempt,
    Batch,
    Event,
    Job,
    Ledger,
    Renewal,
    SessionState,
)


def new_state(session: str, grant: Grant) -> SessionState:
    return SessionState(
        session=session,
        policy_digest=grant.digest(),
        policy_generation=1,
        ledger=Ledger(allowance=grant.session.allowance_requests),
    )


def lease_of(state: SessionState, batch: Batch, job: Job, attempt: Attempt) -> WorkerLease | None:
    if attempt.lease is None:
        return None
    return WorkerLease(
        state.session,
        batch.batch_id,
        job.job_id,
        attempt.attempt_id,
        attempt.lease,
        attempt.packet_digest,
    )


def log_event(batch: Batch, job: Job, attempt: Attempt, now_ms: int) -> None:
    """A visible change of the job's result: a new revision and a collection event."""
    job.result_revision += 1
    batch.events.append(
        Event(
            batch.cursor() + 1,
            job.job_id,
            attempt.attempt_id,
            job.result_revision,
            attempt.state,
            now_ms,
        )
    )


def release(state: SessionState, attempt: Attempt) -> None:
    """Return an attempt's unused reservation to the session once its resources settled."""
    state.ledger.reserved -= attempt.reserved
    attempt.reserved = 0


def stop(
    state: SessionState,
    batch: Batch,
    job: Job,
    attempt: Attempt,
    *,
    target: State,
    reason: str,
    now_ms: int,
    revoked: list[WorkerLease],
) -> None:
    """Cancel or expire an active attempt: the lease is revoked first (nothing it sends later is
    accepted); a queued attempt's reservation is released at once, a running one's only when
    its worker confirms it stopped (``settle_stopped``)."""
    lease = lease_of(state, batch, job, attempt)
    attempt.lease = None
    attempt.state = transition(attempt.state, target)
    attempt.reason = reason
    if attempt.settlement is Settlement.RESERVED:
        attempt.settlement = settle(attempt.settlement, Settlement.SETTLED)
        attempt.settled_at_ms = now_ms
        release(state, attempt)
    elif lease is not None:
        revoked.append(lease)
    log_event(batch, job, attempt, now_ms)


def sync_policy(state: SessionState, grant: Grant, now_ms: int, revoked: list[WorkerLease]) -> None:
    """A changed grant is a new ``policyGeneration``: active work under the old grant is
    cancelled (its grant was revoked), ready results go stale (policy drift needs the parent's
    reassessment), and the allowance is renewed on top of everything already consumed."""
    digest = grant.digest()
    if digest == state.policy_digest:
        return
    state.policy_generation += 1
    state.policy_digest = digest
    invalidate(state, now_ms, revoked, "the delegation policy changed")
    state.renewals.append(
        Renewal(
            state.policy_generation, grant.session.allowance_requests, state.ledger.consumed, now_ms
        )
    )
    state.ledger.allowance = (
        state.ledger.consumed + state.ledger.reserved + grant.session.allowance_requests
    )


def invalidate(state: SessionState, now_ms: int, revoked: list[WorkerLease], reason: str) -> None:
    for batch, job, attempt in state.attempts():
        if attempt is not job.current:
            continue
        if attempt.state in ACTIVE:
            stop(
                state,
                batch,
                job,
                attempt,
                target=State.CANCELLED,
                reason=reason,
                now_ms=now_ms,
                revoked=revoked,
            )
        elif attempt.state is State.READY:
            attempt.state = transition(attempt.state, State.STALE)
            attempt.reason = reason
            log_event(batch, job, attempt, now_ms)


def apply_deadlines(state: SessionState, now_ms: int, revoked: list[WorkerLease]) -> None:
    """A running attempt past its job deadline expires; a queued one is cancelled (the diagram
    has no queued -> expired edge: it never started)."""
    for batch, job, attempt in state.attempts():
        if attempt.state not in ACTIVE or now_ms < job.limits.deadline_at_ms:
            continue
        target = State.EXPIRED if attempt.state is State.RUNNING else State.CANCELLED
        stop(
            state,
            batch,
            job,
            attempt,
            target=target,
            reason="the job deadline passed",
            now_ms=now_ms,
            revoked=revoked,
        )


def bound_source_ids(job: Job, attempt: Attempt) -> tuple[str, ...]:
    """The sources an attempt's result depends on: the job's own, and those its granted
    receipts are bound to ("bound source generation when relevant", seed §4)."""
    bound = (r.source_ids for r in attempt.envelope.receipts)
    return (*job.source_ids, *(source_id for ids in bound for source_id in ids))


def apply_source_changes(state: SessionState, changed: Callable[[str], bool], now_ms: int) -> None:
    """A ready result whose bound source no longer has its captured bytes goes stale. Only the
    sources the job bound count: an unrelated file never invalidates a result."""
    for batch, job, attempt in state.attempts():
        if attempt.state is State.READY and any(changed(s) for s in bound_source_ids(job, attempt)):
            attempt.state = transition(attempt.state, State.STALE)
            attempt.reason = "a bound source changed since it was captured"
            log_event(batch, job, attempt, now_ms)


def settling(state: SessionState) -> int:
    """Attempts whose worker may still hold provider resources (running, or stopped without
    confirmation): each keeps its concurrency slot."""
    return sum(
        attempt.settlement in (Settlement.IN_FLIGHT, Settlement.UNCERTAIN)
        for _, _, attempt in state.attempts()
    )


def record_settlement(
    lease: WorkerLease,
    confirmed: bool,
    state: SessionState,
    _grant: Grant,
    now_ms: int,
    _revoked: list[WorkerLease],
) -> None:
    """What a stop request achieved: resources settled (the reservation returns) or not known
    (the slot stays taken as ``uncertain``: no new work under the fiction nothing runs)."""
    found = state.find_attempt(lease.attempt_id)
    if found is None or found[2].settlement is not Settlement.IN_FLIGHT:
        return
    attempt = found[2]
    if confirmed:
        attempt.settlement = settle(attempt.settlement, Settlement.SETTLED)
        attempt.settled_at_ms = now_ms
        release(state, attempt)
    else:
        attempt.settlement = settle(attempt.settlement, Settlement.UNCERTAIN)
