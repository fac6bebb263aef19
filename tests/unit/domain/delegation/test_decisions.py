"""Delegation's transitions as pure decisions over a frozen session state, with no port in
sight: each takes the state and the facts the caller read and returns the new state, the
answer and the effects that wait for the write (leases to stop, a lost host's survivors)."""

from __future__ import annotations

import attrs
import pytest

from domain.delegation.decision import Decision, Survivor
from domain.delegation.ledger import record_settlement, stop
from domain.delegation.lifecycle import Settlement, State
from domain.delegation.policy import Grant, SessionGrant
from domain.delegation.recovery import HOST_LOST, recover_lost_hosts
from domain.delegation.session import ProcessRecord, SessionState
from domain.delegation.upkeep import renewed
from domain.delegation.worker_protocol import WorkerLease, WorkerOutcome
from domain.delegation.worker_side import publish, start_ready
from domain.usage import Usage
from tests.unit.domain.delegation.states import NOW_MS, admitted_state, fresh_state

HOST = ProcessRecord(7, "host-7")
WORKER = ProcessRecord(8, "worker-8")


def running() -> tuple[SessionState, WorkerLease]:
    """One admitted job started by a host recorded as ``HOST``; the state and its lease."""
    decision = start_ready(
        admitted_state(),
        Grant(),
        NOW_MS,
        token=lambda: "token-1",
        changed=lambda _source: False,
        host=HOST,
    )
    [start] = decision.answer
    return decision.state, start.lease


def only_attempt(state: SessionState) -> tuple[int, State, Settlement, int]:
    """(job revision, state, settlement, reserved) of the only attempt."""
    [(_, job, attempt)] = state.attempts()
    return job.result_revision, attempt.state, attempt.settlement, attempt.reserved


def test_the_session_state_cannot_be_changed_in_place() -> None:
    state = admitted_state()
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        state.task_generation = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        state.batches["b-new"] = next(iter(state.batches.values()))  # type: ignore[index]
    [(_, _, attempt)] = state.attempts()
    with pytest.raises(TypeError):
        attempt.validation["schema"] = "ok"  # type: ignore[index]


def test_a_decision_leaves_the_state_it_was_given_as_it_was() -> None:
    before = admitted_state()
    kept = attrs.evolve(before)
    decision = stop(
        before, before.attempts()[0][2].attempt_id, target=State.CANCELLED, reason="r", now_ms=2
    )
    assert before == kept
    assert decision.state != before


def test_a_later_decision_keeps_the_earlier_effects_first() -> None:
    state = fresh_state()
    first = WorkerLease("s1", "b", "j", "a1", "t1", "d")
    second = WorkerLease("s1", "b", "j", "a2", "t2", "d")
    earlier = Decision(state, None, (first,), (Survivor("a1", WORKER),))
    later = Decision(attrs.evolve(state, task_generation=1), "answer", (second,))
    combined = earlier.then(later)
    assert (combined.state, combined.answer) == (later.state, "answer")
    assert combined.revoked == (first, second)
    assert combined.survivors == (Survivor("a1", WORKER),)


def test_stopping_a_queued_attempt_settles_it_at_once_and_revokes_nothing() -> None:
    state = admitted_state()
    [(_, _, attempt)] = state.attempts()
    decision = stop(state, attempt.attempt_id, target=State.CANCELLED, reason="r", now_ms=5)
    assert decision.revoked == ()
    assert only_attempt(decision.state) == (1, State.CANCELLED, Settlement.SETTLED, 0)
    assert decision.state.ledger.reserved == 0
    assert decision.state.batches[attempt.envelope.batch_id].cursor() == 1


def test_stopping_a_running_attempt_revokes_its_lease_and_holds_its_slot_until_confirmed() -> None:
    state, lease = running()
    decision = stop(state, lease.attempt_id, target=State.CANCELLED, reason="r", now_ms=5)
    assert decision.revoked == (lease,)
    assert only_attempt(decision.state)[1:] == (State.CANCELLED, Settlement.IN_FLIGHT, 4)
    unconfirmed = record_settlement(decision.state, lease, False, 6).state
    assert only_attempt(unconfirmed)[2:] == (Settlement.UNCERTAIN, 4)
    confirmed = record_settlement(decision.state, lease, True, 6).state
    assert only_attempt(confirmed)[2:] == (Settlement.SETTLED, 0)
    assert confirmed.ledger.reserved == 0


def test_a_renewal_cancels_active_work_and_renews_the_allowance() -> None:
    state, lease = running()
    wider = Grant(session=SessionGrant(allowance_requests=10))
    decision = renewed(state, wider, 9)
    assert decision.state.policy_generation == 2
    assert decision.state.policy_digest == wider.digest()
    assert decision.revoked == (lease,)
    assert only_attempt(decision.state)[1] is State.CANCELLED
    ledger = decision.state.ledger
    assert (ledger.allowance, ledger.reserved, ledger.consumed) == (14, 4, 0)
    # A person renewing again under the same grant renews again: each renewal is explicit.
    again = renewed(decision.state, wider, 10).state
    assert again.policy_generation == 3
    assert [r.policy_generation for r in again.renewals] == [2, 3]


def test_a_report_under_a_revoked_lease_is_counted_and_its_usage_kept_never_published() -> None:
    state, lease = running()
    cancelled = stop(state, lease.attempt_id, target=State.CANCELLED, reason="r", now_ms=5).state
    usage = Usage.turn(input_tokens=10, output_tokens=2)
    outcome = WorkerOutcome(raw=b"{}", usage=usage, per_request=(usage,))

    def no_read(_sha256: str) -> bytes:
        raise AssertionError("a late result is never judged")

    decision = publish(cancelled, lease, outcome, 6, read_source=no_read)
    assert decision.answer == {
        "published": False,
        "reason": "attempt is cancelled: late result dropped",
    }
    [(_, job, attempt)] = decision.state.attempts()
    assert (attempt.late_results, attempt.usage, attempt.request_usage) == (1, usage, (usage,))
    assert job.result_revision == 1  # the cancellation's event only


def test_a_lost_hosts_running_attempt_fails_and_its_live_worker_is_a_survivor() -> None:
    state, lease = running()
    [(_, _, attempt)] = state.attempts()
    state = state.with_attempt(attrs.evolve(attempt, worker=WORKER))
    alive = {HOST: False, WORKER: True}
    decision = recover_lost_hosts(state, 7, alive.__getitem__, me=None)
    assert decision.survivors == (Survivor(lease.attempt_id, WORKER),)
    [(_, _, recovered)] = decision.state.attempts()
    assert (recovered.state, recovered.stop_reason, recovered.lease) == (
        State.FAILED,
        HOST_LOST,
        None,
    )
    assert recovered.settlement is Settlement.UNCERTAIN
    # This process's own attempts are never recovered: its runtime knows them.
    assert recover_lost_hosts(state, 7, alive.__getitem__, me=HOST).state == state
