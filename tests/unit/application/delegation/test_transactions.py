"""The host's transactions on the in-memory session store, which records each commit: every
operation is load → decide → save, a refusal or a read commits nothing, and what a worker's
stop achieved is committed after the state that revoked its lease."""

from __future__ import annotations

import pytest

from domain.delegation.errors import DelegationError
from domain.delegation.lifecycle import Settlement, State
from tests.fakes.delegation import DelegationWorld, InMemoryDelegationStore
from tests.unit.application.delegation.support import GRANT, job, run_request


def in_memory() -> tuple[DelegationWorld, InMemoryDelegationStore]:
    store = InMemoryDelegationStore()
    return DelegationWorld(GRANT, memory=store), store


def test_a_run_commits_its_admission_then_the_start_of_its_worker() -> None:
    w, store = in_memory()
    admitted = w.host().handle(run_request())
    admission, start = store.commits
    [(_, _, queued)] = admission.state.attempts()
    [(_, _, started)] = start.state.attempts()
    assert (queued.state, started.state) == (State.QUEUED, State.RUNNING)
    assert started.attempt_id == admitted["jobs"][0]["attemptId"]
    assert store.snapshot("s1") == start.state


def test_a_refused_request_and_a_status_commit_nothing() -> None:
    w, store = in_memory()
    host = w.host()
    with pytest.raises(DelegationError):
        host.handle(run_request(job(sourceIds=["src-never-issued"])))
    assert store.commits == []
    host.handle(run_request())
    committed = len(store.commits)
    host.handle({"version": 1, "op": "status"})
    assert len(store.commits) == committed


def test_a_cancel_commits_the_revocation_then_the_confirmed_settlement() -> None:
    w, store = in_memory()
    host = w.host()
    admitted = host.handle(run_request())
    before = len(store.commits)
    host.handle({"version": 1, "op": "cancel", "batchId": admitted["batchId"]})
    revocation, settlement = store.commits[before:]
    [(_, _, revoked)] = revocation.state.attempts()
    assert (revoked.state, revoked.lease, revoked.settlement) == (
        State.CANCELLED,
        None,
        Settlement.IN_FLIGHT,
    )
    [(_, _, settled)] = settlement.state.attempts()
    assert (settled.settlement, settled.reserved) == (Settlement.SETTLED, 0)
