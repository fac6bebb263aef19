"""The worker side of the host (seed §8 ``run(job)``): starting ready attempts, admitting each
model request and each complete tool call before it happens, and publishing a result.

Every callback names its lease; a lease the state no longer holds (cancelled, expired,
navigated away, policy changed) is refused, so a late result is dropped (counted, its usage
still recorded, never published).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from application.delegation.ledger import lease_of, log_event, release, settling, stop
from application.ports import DelegationStore, WorkerLease, WorkerOutcome, WorkerStart
from domain.delegation.envelope import WORKER_TOOLS
from domain.delegation.lifecycle import Settlement, State, settle, transition
from domain.delegation.policy import Grant
from domain.delegation.result import judge_output
from domain.delegation.session import Attempt, SessionState


def start_ready(
    state: SessionState,
    grant: Grant,
    now_ms: int,
    revoked: list[WorkerLease],
    *,
    token: Callable[[], str],
    changed: Callable[[str], bool],
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
            or any(changed(source_id) for source_id in job.source_ids)
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
        lease = lease_of(state, batch, job, attempt)
        assert lease is not None
        starts.append(WorkerStart(lease, envelope, envelope.packet_bytes()))
    return starts


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


def publish(
    state: SessionState,
    lease: WorkerLease,
    outcome: WorkerOutcome,
    store: DelegationStore,
    now_ms: int,
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
    )
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
    release(state, attempt)
    log_event(batch, job, attempt, now_ms)
    return {"published": True, "state": str(attempt.state)}
