"""Recovery of a lost host's attempts (domain/delegation/recovery.py) with fake
processes: the next transaction of any other host settles them at once, stops only a worker
whose identity matches exactly, and never lets a late result publish."""

from __future__ import annotations

from typing import Any

from application.ports import WorkerLease
from tests.fakes.delegation import DelegationWorld, FakeProcesses, outcome, report
from tests.unit.application.delegation.support import (
    assert_late_result_dropped,
    first_item,
    first_lease,
    run_request,
    world,
)

HOST_A, HOST_B, WORKER = 100, 200, 555


def _running_job(
    *, worker: bool = True
) -> tuple[DelegationWorld, FakeProcesses, dict[str, Any], WorkerLease]:
    """Host A (pid 100) admits and starts a job whose worker is pid 555."""
    w = world()
    processes_a = FakeProcesses(pid=HOST_A, running={WORKER: "start-555"})
    host_a = w.host(processes=processes_a)
    admitted = host_a.handle(run_request())
    lease = first_lease(w, admitted)
    assert host_a.authorize_request(lease)
    if worker:
        host_a.record_worker(lease, WORKER)
    return w, processes_a, admitted, lease


def _after_a_died(running: dict[int, str], **kwargs: Any) -> FakeProcesses:
    """What host B (pid 200) sees: host A's pid is no longer running."""
    return FakeProcesses(pid=HOST_B, running=running, **kwargs)


def _status(host: Any, batch_id: str) -> dict[str, Any]:
    status: dict[str, Any] = host.handle({"version": 1, "op": "status", "batchId": batch_id})
    return status


def test_a_lost_hosts_running_job_fails_at_once_and_its_live_worker_is_stopped() -> None:
    w, _, admitted, lease = _running_job()
    seen = _after_a_died({WORKER: "start-555"})
    host_b = w.host(processes=seen)
    # The status is read while the worker is being stopped (after the transaction).
    row = _status(host_b, admitted["batchId"])["jobs"][0]
    assert (row["state"], row["settlement"]) == ("failed", "uncertain")
    assert seen.terminated == [WORKER]  # its identity matched exactly
    assert _status(host_b, admitted["batchId"])["jobs"][0]["settlement"] == "settled"
    receipt = first_item(host_b, admitted["batchId"])["receipt"]
    assert receipt["observations"]["stopReason"] == "host_lost"
    assert receipt["observations"]["failure"]["kind"] == "host_lost"
    assert receipt["observations"]["workerProcess"] == WORKER
    assert receipt["problem"].startswith("host_lost: pid 100 is gone")
    assert "delegate run" in receipt["problem"]  # the next command
    ledger = host_b.handle({"version": 1, "op": "status"})
    assert ledger["ledger"]["reserved"] == 0  # the unused reservation is released
    assert ledger["settling"] == 0  # the slot is free
    # A surviving worker's bridge is refused; a late report never publishes.
    assert host_b.authorize_request(lease) is False
    assert host_b.authorize_tool(lease, "read_source")[0] is False
    assert host_b.report(lease, outcome(report()))["published"] is False
    assert_late_result_dropped(host_b, admitted["batchId"], "failed")


def test_a_worker_already_gone_is_settled_without_signalling_anything() -> None:
    w, _, admitted, _ = _running_job()
    seen = _after_a_died({})
    row = _status(w.host(processes=seen), admitted["batchId"])["jobs"][0]
    assert (row["state"], row["settlement"]) == ("failed", "settled")
    assert seen.terminated == []


def test_a_reused_pid_is_never_signalled() -> None:
    w, _, admitted, _ = _running_job()
    seen = _after_a_died({WORKER: "someone-else", HOST_A: "someone-else-too"})
    row = _status(w.host(processes=seen), admitted["batchId"])["jobs"][0]
    # Another process under host A's pid: A is gone; another under the worker's: not ours.
    assert (row["state"], row["settlement"]) == ("failed", "settled")
    assert seen.terminated == []


def test_a_live_host_in_another_process_is_left_alone() -> None:
    w, _, admitted, _ = _running_job()
    seen = _after_a_died({HOST_A: f"start-{HOST_A}", WORKER: "start-555"})
    row = _status(w.host(processes=seen), admitted["batchId"])["jobs"][0]
    assert (row["state"], row["settlement"]) == ("running", "in_flight")
    assert seen.terminated == []


def test_a_host_that_cannot_be_told_is_left_alone() -> None:
    w, _, admitted, _ = _running_job()
    seen = _after_a_died({WORKER: "start-555"}, unknown={HOST_A})
    row = _status(w.host(processes=seen), admitted["batchId"])["jobs"][0]
    assert row["state"] == "running"


def test_this_process_never_recovers_its_own_attempts() -> None:
    w, processes_a, admitted, _ = _running_job()
    del processes_a.running[WORKER]  # even with its worker gone: its runtime reports that
    row = _status(w.host(processes=processes_a), admitted["batchId"])["jobs"][0]
    assert row["state"] == "running"


def test_a_worker_that_cannot_be_told_or_stopped_keeps_its_slot_uncertain() -> None:
    for seen in (
        _after_a_died({WORKER: "start-555"}, unknown={WORKER}),
        _after_a_died({WORKER: "start-555"}, stoppable=False),
    ):
        w, _, admitted, _ = _running_job()
        host_b = w.host(processes=seen)
        _status(host_b, admitted["batchId"])
        row = _status(host_b, admitted["batchId"])["jobs"][0]
        assert (row["state"], row["settlement"]) == ("failed", "uncertain")
        assert host_b.handle({"version": 1, "op": "status"})["settling"] == 1
        assert len(seen.terminated) <= 1  # stopped at most once


def test_a_worker_never_recorded_is_settled_with_its_host() -> None:
    w, _, admitted, _ = _running_job(worker=False)
    row = _status(w.host(processes=_after_a_died({})), admitted["batchId"])["jobs"][0]
    assert (row["state"], row["settlement"]) == ("failed", "settled")


def test_an_uncertain_cancel_of_a_lost_host_is_settled_once_its_worker_is_gone() -> None:
    w, processes_a, admitted, _ = _running_job()
    w.runtime.confirms_cancel = False  # another process cancels: it cannot reach the worker
    host_a = w.host(processes=processes_a)
    host_a.handle({"version": 1, "op": "cancel", "batchId": admitted["batchId"]})
    assert _status(host_a, admitted["batchId"])["jobs"][0]["settlement"] == "uncertain"
    row = _status(w.host(processes=_after_a_died({})), admitted["batchId"])["jobs"][0]
    assert (row["state"], row["settlement"]) == ("cancelled", "settled")


def test_the_freed_slot_starts_queued_work_in_the_recovering_host() -> None:
    from domain.delegation.policy import SessionGrant
    from tests.unit.application.delegation.support import job

    w = world(session=SessionGrant(max_active_jobs=1))
    processes_a = FakeProcesses(pid=HOST_A)
    admitted = w.host(processes=processes_a).handle(run_request(job("a"), job("b")))
    assert len(w.runtime.starts) == 1  # one slot: b waits
    host_b = w.host(processes=_after_a_died({}))
    _status(host_b, admitted["batchId"])  # recovers, then starts what the slot allows
    rows = _status(host_b, admitted["batchId"])["jobs"]
    assert [r["state"] for r in rows] == ["failed", "running"]
    assert len(w.runtime.starts) == 2
