"""Races (seed §9) on the real file system and OS locks, with threads standing for hosts in
separate processes: simultaneous admission against one reservation, cancellation between a
tool decision and its execution, and late results racing cancellation or task navigation."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from adapters.delegation.store import FileDelegationStore
from adapters.store.lock import FastenersLockFactory
from application.delegation.host import DelegationHost
from application.delegation.transactions import SessionPorts
from domain.delegation.errors import DelegationError
from domain.delegation.policy import Grant, SessionGrant
from tests.fakes.clock import FakeClock, SequentialIds
from tests.fakes.delegation import FakeWakeup, FakeWorkerRuntime, FixedGrants, outcome, report
from tests.host_fs import host_file_system
from tests.unit.application.delegation.support import job, run_request

THREADS = 8


@attrs.define
class RealWorld:
    base: Path
    grant: Grant
    runtime: FakeWorkerRuntime = attrs.field(factory=FakeWorkerRuntime)
    clock: FakeClock = attrs.field(factory=FakeClock)
    ids: SequentialIds = attrs.field(factory=SequentialIds)
    locks: FastenersLockFactory = attrs.field(factory=FastenersLockFactory)

    def host(self) -> DelegationHost:
        fs = host_file_system()
        store = FileDelegationStore(fs, self.locks, str(self.base / "root"))
        grants = FixedGrants(self.grant)
        ports = SessionPorts(store, self.runtime, grants, fs, self.clock, FakeWakeup(self.clock))
        return DelegationHost(session="race", ports=ports, ids=self.ids, cwd=str(self.base))


def together(actions: list[Callable[[], Any]]) -> list[Any]:
    """Run every action on its own thread, released at once; each one's result or error."""
    barrier = threading.Barrier(len(actions))
    results: list[Any] = [None] * len(actions)

    def run(index: int) -> None:
        barrier.wait()
        try:
            results[index] = actions[index]()
        except DelegationError as error:
            results[index] = error

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(actions))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_simultaneous_admissions_against_one_reservation(tmp_path: Path) -> None:
    world = RealWorld(tmp_path, Grant(session=SessionGrant(allowance_requests=4)))
    requests = [run_request(job(f"k{i}")) for i in range(THREADS)]
    hosts = [world.host() for _ in requests]
    actions: list[Callable[[], Any]] = [
        functools.partial(h.handle, r) for h, r in zip(hosts, requests, strict=True)
    ]
    results = together(actions)
    admitted = [r for r in results if isinstance(r, dict)]
    refused = [r for r in results if isinstance(r, DelegationError)]
    assert len(admitted) == 1
    assert {e.code for e in refused} == {"DELEGATE_CAPACITY_EXHAUSTED"}
    status = world.host().handle({"version": 1, "op": "status"})
    assert status["ledger"]["reserved"] == 4
    assert len(status["batches"]) == 1


def test_the_same_request_raced_with_one_key_admits_one_job(tmp_path: Path) -> None:
    world = RealWorld(tmp_path, Grant())
    request = run_request(idempotencyKey="same")
    results = together([lambda: world.host().handle(request) for _ in range(THREADS)])
    assert len({r["batchId"] for r in results}) == 1
    assert sum("replayed" in r for r in results) == THREADS - 1
    assert len(world.runtime.starts) == 1


def test_cancellation_between_a_tool_decision_and_its_execution(tmp_path: Path) -> None:
    world = RealWorld(tmp_path, Grant())
    host = world.host()
    admitted = host.handle(run_request())
    lease = world.runtime.lease(admitted["jobs"][0]["jobId"])
    decided, cancelled = threading.Event(), threading.Event()
    checks: list[tuple[bool, str]] = []

    def worker() -> None:
        checks.append(world.host().authorize_tool(lease, "read_source"))
        decided.set()  # the model chose its next tool call; it has not run yet
        cancelled.wait(10)
        checks.append(world.host().authorize_tool(lease, "read_source"))

    thread = threading.Thread(target=worker)
    thread.start()
    decided.wait(10)
    world.host().handle({"version": 1, "op": "cancel", "batchId": admitted["batchId"]})
    cancelled.set()
    thread.join()
    assert checks == [(True, "allowed"), (False, "the lease was revoked")]


def _race_once(base: Path, interrupt: Callable[[DelegationHost, str], Any]) -> None:
    world = RealWorld(base, Grant())
    host = world.host()
    admitted = host.handle(run_request())
    lease = world.runtime.lease(admitted["jobs"][0]["jobId"])
    published, _ = together(
        [
            lambda: world.host().report(lease, outcome(report()))["published"],
            lambda: interrupt(world.host(), admitted["batchId"]),
        ]
    )
    status = host.handle({"version": 1, "op": "status", "batchId": admitted["batchId"]})
    state = status["jobs"][0]["state"]
    # Either the result was published before the interruption, or it was dropped.
    assert (published, state) in {(True, "ready"), (True, "stale"), (False, "cancelled")}


def _race_late_result(tmp_path: Path, interrupt: Callable[[DelegationHost, str], Any]) -> None:
    for round_ in range(6):
        _race_once(tmp_path / str(round_), interrupt)


def test_a_late_result_racing_cancellation(tmp_path: Path) -> None:
    _race_late_result(
        tmp_path, lambda host, batch: host.handle({"version": 1, "op": "cancel", "batchId": batch})
    )


def test_a_late_result_racing_task_navigation(tmp_path: Path) -> None:
    _race_late_result(tmp_path, lambda host, _batch: host.navigate("session_before_tree"))
