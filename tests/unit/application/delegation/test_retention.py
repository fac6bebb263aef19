"""Bounded retention (seed §2, issue 30): every batch held counts toward ``maxBatches``,
cancelled ones too; a settled batch is pruned once the session's retention passes after its
last change (with the idempotency records that answered for it), an active one never; so the
state every transaction rewrites stays bounded however long the session runs."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.delegation.store_codec import encode_state
from domain.delegation.errors import DelegationError
from domain.delegation.policy import SessionGrant
from tests.fakes.delegation import DelegationWorld
from tests.unit.application.delegation.support import run_request, started, world

RETENTION_MS = 60_000


def small_session() -> DelegationWorld:
    return world(session=SessionGrant(max_batches=2, retention_ms=RETENTION_MS))


def cancelled(w: DelegationWorld, host: Any, key: str) -> str:
    admitted = started(w, host, idempotencyKey=key)
    host.handle({"version": 1, "op": "cancel", "batchId": admitted["batchId"]})
    batch_id: str = admitted["batchId"]
    return batch_id


def state_of(w: DelegationWorld) -> Any:
    state = w.store.snapshot("s1")
    assert state is not None
    return state


def test_cancelled_batches_count_until_retention_prunes_them() -> None:
    w = small_session()
    host = w.host()
    first = cancelled(w, host, "one")
    cancelled(w, host, "two")
    with pytest.raises(DelegationError) as error:
        host.handle(run_request(idempotencyKey="three"))
    assert error.value.code == "DELEGATE_CAPACITY_EXHAUSTED"
    assert "holds 2 batches; maxBatches allows 2" in error.value.message
    assert "pruned in" in error.value.message
    w.clock.advance(RETENTION_MS / 1000 + 1)
    third = host.handle(run_request(idempotencyKey="three"))
    state = state_of(w)
    assert first not in state.batches
    assert third["batchId"] in state.batches
    assert len(state.batches) == 1  # both cancelled batches pruned
    assert len(state.idempotency) == 1  # only the live batch's run record is kept
    with pytest.raises(DelegationError) as gone:
        host.handle({"version": 1, "op": "collect", "batchId": first})
    assert gone.value.code == "DELEGATE_NOT_FOUND"


def test_a_batch_with_active_work_is_never_pruned() -> None:
    w = small_session()
    host = w.host()
    running = started(w, host)
    w.clock.advance(RETENTION_MS / 1000 * 5)
    cancelled(w, host, "later")
    state = state_of(w)
    assert running["batchId"] in state.batches


def test_the_state_a_transaction_rewrites_stays_bounded_over_a_long_session() -> None:
    w = small_session()
    host = w.host()
    sizes = []
    for round_number in range(12):
        cancelled(w, host, f"k{round_number}")
        sizes.append(len(encode_state(state_of(w))))
        w.clock.advance(RETENTION_MS / 1000 + 1)
    assert len(state_of(w).batches) <= 2
    # History does not accumulate: later states differ only by longer numbers in their IDs.
    assert max(sizes[4:]) <= max(sizes[:4]) + 64
