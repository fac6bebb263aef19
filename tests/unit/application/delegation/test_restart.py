"""Durability (issue 17, deliverable 6): a host restart between every pair of operations loses
nothing and duplicates no job; a failed write at any step leaves the state the last successful
transaction wrote (an operation may be two transactions: admission, then starting workers),
and repeating the operation on a restarted host converges on the same batches, attempts and
ledger."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from adapters.delegation.store_codec import encode_state
from application.delegation.host import DelegationHost
from tests.fakes.delegation import PROJECT, DelegationWorld, outcome, report
from tests.unit.application.delegation.support import (
    evidenced_report,
    first_item,
    follow_up_request,
    job,
    resolve_request,
    run_request,
    world,
)

Op = Callable[[DelegationWorld, DelegationHost, dict[str, Any]], Any]


def _capture(w: DelegationWorld, host: DelegationHost, memo: dict[str, Any]) -> Any:
    answer = host.handle({"version": 1, "op": "capture", "paths": ["a.py"]})
    memo["source"] = answer["sources"][0]["sourceId"]
    return answer


def _run(w: DelegationWorld, host: DelegationHost, memo: dict[str, Any]) -> Any:
    answer = host.handle(
        run_request(job("a", sourceIds=[memo["source"]]), job("b"), idempotencyKey="run-1")
    )
    memo["batch"] = answer["batchId"]
    memo["jobs"] = [row["jobId"] for row in answer["jobs"]]
    return answer


def _request(w: DelegationWorld, host: DelegationHost, memo: dict[str, Any]) -> Any:
    return host.authorize_request(w.runtime.lease(memo["jobs"][0]))


def _gap(w: DelegationWorld, host: DelegationHost, memo: dict[str, Any]) -> Any:
    return host.report(w.runtime.lease(memo["jobs"][0]), outcome(report("needs_context")))


def _collect(w: DelegationWorld, host: DelegationHost, memo: dict[str, Any]) -> Any:
    memo["item"] = first_item(host, memo["batch"], jobIds=[memo["jobs"][0]])
    return memo["item"]


def _follow_up(w: DelegationWorld, host: DelegationHost, memo: dict[str, Any]) -> Any:
    return host.handle(follow_up_request(memo["item"], "context_gap"))


def _complete(w: DelegationWorld, host: DelegationHost, memo: dict[str, Any]) -> Any:
    first, *others = memo["jobs"]
    host.report(w.runtime.lease(first), outcome(evidenced_report(memo["source"])))
    for job_id in others:
        host.report(w.runtime.lease(job_id), outcome(report()))


def _acknowledge(w: DelegationWorld, host: DelegationHost, memo: dict[str, Any]) -> Any:
    first = host.handle({"version": 1, "op": "collect", "batchId": memo["batch"]})
    memo["cursor"] = first["collectionCursor"]
    return host.handle(
        {"version": 1, "op": "collect", "batchId": memo["batch"], "afterCursor": memo["cursor"]}
    )


def _resolve(w: DelegationWorld, host: DelegationHost, memo: dict[str, Any]) -> Any:
    item = first_item(host, memo["batch"], jobIds=[memo["jobs"][0]])
    return host.handle(resolve_request(item, "accept"))


def _rerun(w: DelegationWorld, host: DelegationHost, memo: dict[str, Any]) -> Any:
    return _run(w, host, dict(memo))


def _cancel(w: DelegationWorld, host: DelegationHost, memo: dict[str, Any]) -> Any:
    return host.handle(
        {"version": 1, "op": "cancel", "batchId": memo["batch"], "idempotencyKey": "c"}
    )


OPS: list[Op] = [
    _capture,
    _run,
    _request,
    _gap,
    _collect,
    _follow_up,
    _complete,
    _acknowledge,
    _resolve,
    _rerun,
    _cancel,
]


def fresh_world() -> DelegationWorld:
    w = world()
    w.fs.add_file(f"{PROJECT}/a.py", b"a = 1\nb = 2\n")
    return w


def state_bytes(w: DelegationWorld) -> bytes | None:
    state = w.store.snapshot("s1")
    return None if state is None else encode_state(state)


def play(restart: bool) -> tuple[DelegationWorld, list[Any]]:
    w = fresh_world()
    host = w.host()
    memo: dict[str, Any] = {}
    answers = []
    for op in OPS:
        if restart:
            host = w.host()
        answers.append(op(w, host, memo))
    return w, answers


def test_a_restart_between_every_pair_of_operations_changes_nothing() -> None:
    steady, steady_answers = play(restart=False)
    restarted, restarted_answers = play(restart=True)
    assert restarted_answers == steady_answers
    assert state_bytes(restarted) == state_bytes(steady)
    state = restarted.store.snapshot("s1")
    assert state is not None
    assert len(state.batches) == 1  # the repeated run replayed: no duplicate job
    assert restarted_answers[OPS.index(_rerun)]["replayed"] is True
    [batch] = state.batches.values()
    assert batch.acknowledged == batch.cursor() - 1  # the resolve's event came after the ack
    assert state.ledger.consumed == 1
    assert state.ledger.reserved == 0


def _write_steps() -> list[tuple[str, int]]:
    w = fresh_world()
    host = w.host()
    memo: dict[str, Any] = {}
    for op in OPS:
        op(w, host, memo)
    steps = []
    for name in ("write_atomic", "create_file_exclusive"):
        steps += [(name, n) for n in range(1, len(w.fs.calls_of(name)) + 1)]
    return steps


@pytest.mark.parametrize("step", _write_steps())
def test_a_failed_write_at_any_step_leaves_the_previous_state(step: tuple[str, int]) -> None:
    w = fresh_world()
    # The state as the last successful transaction left it, read just before the failing write.
    last_good: list[bytes | None] = []
    w.fs.before(step[0], lambda: last_good.append(state_bytes(w)), call=step[1])
    w.fs.fail(step[0], call=step[1])
    memo: dict[str, Any] = {}
    failed = 0
    for op in OPS:
        try:
            op(w, w.host(), memo)
        except OSError:
            failed += 1
            assert state_bytes(w) == last_good[0]
            op(w, w.host(), memo)  # repeated after the failure, on a restarted host
    assert failed == 1
    state = w.store.snapshot("s1")
    assert state is not None
    assert len(state.batches) == 1
    [batch] = state.batches.values()
    assert [len(job.attempts) for job in batch.jobs] == [2, 1]
    assert state.ledger.consumed == 1
    assert state.ledger.reserved == 0
