"""Shared steps of every delegation transaction: a session's state created under its grant,
deadlines and staleness applied, leases revoked, reservations released. Each
step takes the frozen state and returns a new one (or a :class:`Decision` when it revokes
leases); the caller supplies time and the facts it read."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from domain.delegation.decision import Decision, unchanged
from domain.delegation.lifecycle import (
    ACTIVE,
    FROZEN_TARGET,
    SETTLING,
    Settlement,
    State,
    settle,
    transition,
)
from domain.delegation.policy import Grant
from domain.delegation.session import Attempt, Job, Ledger, SessionState
from domain.delegation.worker_protocol import WorkerLease


def new_state(session: str, grant: Grant) -> SessionState:
    return SessionState(
        session=session,
        policy_digest=grant.digest(),
        policy_generation=1,
        ledger=Ledger(allowance=grant.session.allowance_requests),
    )


def lease_of(state: SessionState, attempt: Attempt) -> WorkerLease | None:
    if attempt.lease is None:
        return None
    batch, job, _ = state.found(attempt.attempt_id)
    return WorkerLease(
        state.session,
        batch.batch_id,
        job.job_id,
        attempt.attempt_id,
        attempt.lease,
        attempt.packet_digest,
    )


def released(state: SessionState, attempt: Attempt) -> tuple[SessionState, Attempt]:
    """An attempt's unused reservation returned to the session (its resources settled)."""
    ledger = state.ledger.release(attempt.reserved)
    return state.with_ledger(ledger), attrs.evolve(attempt, reserved=0)


def settled(state: SessionState, attempt: Attempt, now_ms: int) -> tuple[SessionState, Attempt]:
    """The attempt's provider resources settled now, its unused reservation returned."""
    attempt = attrs.evolve(
        attempt,
        settlement=settle(attempt.settlement, Settlement.SETTLED),
        settled_at_ms=now_ms,
    )
    return released(state, attempt)


def stop(
    state: SessionState, attempt_id: str, *, target: State, reason: str, now_ms: int
) -> Decision[None]:
    """Cancel or expire an active attempt: the lease is revoked first (nothing it sends later is
    accepted); a queued attempt's reservation is released at once, a running one's only when
    its worker confirms it stopped (``record_settlement``)."""
    _, _, attempt = state.found(attempt_id)
    lease = lease_of(state, attempt)
    attempt = attrs.evolve(
        attempt, lease=None, state=transition(attempt.state, target), reason=reason
    )
    revoked: tuple[WorkerLease, ...] = ()
    if attempt.settlement is Settlement.RESERVED:
        state, attempt = settled(state, attempt, now_ms)
    elif lease is not None:
        revoked = (lease,)
    return Decision(state.with_event(attempt, now_ms), None, revoked)


def invalidate(state: SessionState, now_ms: int, reason: str) -> Decision[None]:
    """Every job's active attempt cancelled, every ready result stale."""
    decision = unchanged(state, None)
    for _, _, attempt in state.current_attempts():
        if attempt.state in ACTIVE:
            decision = decision.then(
                stop(
                    decision.state,
                    attempt.attempt_id,
                    target=State.CANCELLED,
                    reason=reason,
                    now_ms=now_ms,
                )
            )
        elif attempt.state is State.READY:
            stale = attrs.evolve(
                attempt, state=transition(attempt.state, State.STALE), reason=reason
            )
            decision = attrs.evolve(decision, state=decision.state.with_event(stale, now_ms))
    return decision


def apply_deadlines(state: SessionState, now_ms: int) -> Decision[None]:
    """A running attempt past its job deadline expires; a queued one is cancelled (the diagram
    has no queued -> expired edge: it never started)."""
    decision = unchanged(state, None)
    for _, job, attempt in state.attempts():
        if attempt.state not in ACTIVE or now_ms < job.limits.deadline_at_ms:
            continue
        target = State.EXPIRED if attempt.state is State.RUNNING else State.CANCELLED
        decision = decision.then(
            stop(
                decision.state,
                attempt.attempt_id,
                target=target,
                reason="the job deadline passed",
                now_ms=now_ms,
            )
        )
    return decision


def bound_source_ids(job: Job, attempt: Attempt) -> tuple[str, ...]:
    """The sources an attempt's result depends on: the job's own, and those its granted
    receipts are bound to ("bound source generation when relevant", seed §4)."""
    bound = (r.source_ids for r in attempt.envelope.receipts)
    return (*job.source_ids, *(source_id for ids in bound for source_id in ids))


def apply_source_changes(
    state: SessionState, changed: Callable[[str], bool], now_ms: int
) -> SessionState:
    """A ready or accepted result whose bound source no longer has its captured bytes goes stale
    (an accepted one keeps its disposition on record but is no longer completion evidence).
    Only the sources the job bound count: an unrelated file never invalidates a result."""
    for _, job, attempt in state.attempts():
        if attempt.state in FROZEN_TARGET and any(
            changed(s) for s in bound_source_ids(job, attempt)
        ):
            stale = attrs.evolve(
                attempt,
                state=transition(attempt.state, State.STALE),
                reason=f"a bound source changed since it was captured (the result was "
                f"{attempt.state}); run the job again on a new capture",
            )
            state = state.with_event(stale, now_ms)
    return state


def settling(state: SessionState) -> int:
    """Attempts whose worker may still hold provider resources (running, or stopped without
    confirmation): each keeps its concurrency slot."""
    return sum(attempt.settlement in SETTLING for _, _, attempt in state.attempts())


def record_settlement(
    state: SessionState, lease: WorkerLease, confirmed: bool, now_ms: int
) -> Decision[None]:
    """What a stop request achieved: resources settled (the reservation returns) or not known
    (the slot stays taken as ``uncertain``: no new work under the fiction nothing runs)."""
    found = state.find_attempt(lease.attempt_id)
    if found is None or found[2].settlement is not Settlement.IN_FLIGHT:
        return unchanged(state, None)
    attempt = found[2]
    if confirmed:
        state, attempt = settled(state, attempt, now_ms)
    else:
        attempt = attrs.evolve(attempt, settlement=settle(attempt.settlement, Settlement.UNCERTAIN))
    return unchanged(state.with_attempt(attempt), None)
