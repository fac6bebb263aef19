"""Work taken back or gone stale, on the fake worker runtime (seed §2, §6, §7): cancel,
deadlines, task navigation and changed sources revoke leases before any worker is stopped,
late and duplicate results never publish, and nothing is accepted by silence."""

from __future__ import annotations

import pytest

from domain.delegation.errors import DelegationError
from domain.delegation.policy import SessionGrant
from domain.usage import Usage
from tests.fakes.delegation import PROJECT, outcome, report
from tests.unit.application.delegation.support import (
    CITED_FILE,
    assert_late_result_dropped,
    cancelled_while_running,
    first_item,
    first_lease,
    job,
    job_states,
    ready_job,
    resolve_request,
    revoked_when_asked,
    started,
    states_after_first_report,
    world,
)


def test_cancel_revokes_the_lease_before_asking_the_worker_to_stop() -> None:
    w = world()
    host = w.host()
    admitted = started(w, host)
    seen = revoked_when_asked(w)
    answer = host.handle({"version": 1, "op": "cancel", "batchId": admitted["batchId"]})
    assert seen == [True]
    assert answer["cancelled"] == [admitted["jobs"][0]["jobId"]]
    assert answer["stillSettling"] == []


def test_a_late_result_after_cancellation_is_dropped_and_counted() -> None:
    _, host, admitted, lease = cancelled_while_running()
    assert host.report(lease, outcome(report()))["published"] is False
    assert host.authorize_request(lease) is False
    assert_late_result_dropped(host, admitted["batchId"], "cancelled")


def test_duplicate_results_publish_once() -> None:
    w, host, admitted, _ = ready_job()
    lease = first_lease(w, admitted)
    assert host.report(lease, outcome(report("partial")))["published"] is False
    assert first_item(host, admitted["batchId"])["receipt"]["hostStatus"] == "ready"


def test_the_deadline_expires_running_work_and_cancels_queued_work() -> None:
    w = world(session=SessionGrant(max_active_jobs=1))
    host = w.host()
    admitted = started(w, host, job("a"), job("b"))
    w.clock.advance(121)
    assert job_states(host, admitted["batchId"]) == ["expired", "cancelled"]
    lease = w.runtime.starts[0].lease
    assert host.report(lease, outcome(report()))["published"] is False


def test_task_navigation_stales_ready_results_and_cancels_running_ones() -> None:
    w = world()
    host = w.host()
    admitted = started(w, host, job("a"), job("b"))
    jobs = [row["jobId"] for row in admitted["jobs"]]
    host.report(w.runtime.lease(jobs[0]), outcome(report()))
    assert host.navigate("session_before_switch") == 1
    assert job_states(host, admitted["batchId"]) == ["stale", "cancelled"]
    assert host.report(w.runtime.lease(jobs[1]), outcome(report()))["published"] is False


def test_a_changed_bound_source_stales_only_the_results_that_bound_it() -> None:
    w = world()
    w.fs.add_file(f"{PROJECT}/a.py", b"a = 1\n")
    w.fs.add_file(f"{PROJECT}/b.py", b"b = 1\n")
    host = w.host()
    sources = host.handle({"version": 1, "op": "capture", "paths": ["a.py", "b.py"]})["sources"]
    admitted = started(
        w,
        host,
        job("a", sourceIds=[sources[0]["sourceId"]]),
        job("b", sourceIds=[sources[1]["sourceId"]]),
    )
    for row in admitted["jobs"]:
        host.report(w.runtime.lease(row["jobId"]), outcome(report()))
    w.fs.add_file(f"{PROJECT}/a.py", b"a = 2\n")
    w.fs.add_file(f"{PROJECT}/unrelated.py", b"x\n")
    assert job_states(host, admitted["batchId"]) == ["stale", "ready"]


def test_an_accepted_result_goes_stale_when_its_bound_source_changes() -> None:
    w, host, admitted, item = ready_job()
    assert host.handle(resolve_request(item, "accept"))["state"] == "accepted"
    w.fs.add_file(f"{PROJECT}/unrelated.py", b"x\n")
    assert job_states(host, admitted["batchId"]) == ["accepted"]
    w.fs.add_file(f"{PROJECT}/{CITED_FILE}", b"def get():\n    return None\n")
    assert job_states(host, admitted["batchId"]) == ["stale"]
    receipt = first_item(host, admitted["batchId"])["receipt"]
    assert receipt["hostStatus"] == "stale"
    assert receipt["disposition"]["disposition"] == "accept"  # the history stays on record
    # Stale is final: the old result can be neither accepted nor held again.
    stale = first_item(host, admitted["batchId"])
    with pytest.raises(DelegationError) as error:
        host.handle(resolve_request(stale, "accept", key="r2"))
    assert error.value.code == "DELEGATE_STATE_REFUSED"


def test_a_bound_source_changed_before_start_cancels_the_queued_job() -> None:
    w = world(session=SessionGrant(max_active_jobs=1))
    w.fs.add_file(f"{PROJECT}/a.py", b"a = 1\n")
    host = w.host()
    [source] = host.handle({"version": 1, "op": "capture", "paths": ["a.py"]})["sources"]
    admitted = started(w, host, job("a"), job("b", sourceIds=[source["sourceId"]]))
    w.fs.add_file(f"{PROJECT}/a.py", b"a = 2\n")
    assert states_after_first_report(w, host, admitted) == ["ready", "cancelled"]
    assert len(w.runtime.starts) == 1


def test_a_renamed_request_never_revives_a_cancelled_job() -> None:
    w = world()
    host = w.host()
    first = started(w, host, idempotencyKey="one")
    host.handle({"version": 1, "op": "cancel", "batchId": first["batchId"]})
    second = started(w, host, idempotencyKey="two")
    assert second["jobs"][0]["jobId"] != first["jobs"][0]["jobId"]
    status = host.handle({"version": 1, "op": "status"})
    assert [b["jobs"][0]["state"] for b in status["batches"]] == ["cancelled", "running"]
    assert status["ledger"]["reserved"] == 4  # the new admission was debited again


def test_collection_and_silence_never_accept() -> None:
    _, host, admitted, _ = ready_job()
    for _ in range(3):
        host.handle({"version": 1, "op": "collect", "batchId": admitted["batchId"]})
    status = host.handle({"version": 1, "op": "status", "batchId": admitted["batchId"]})
    assert status["jobs"][0]["state"] == "ready"


def test_usage_of_failed_and_cancelled_attempts_is_kept_and_unknown_stays_null() -> None:
    _, host, admitted, lease = cancelled_while_running()
    late = outcome(report(), usage=Usage.turn(input_tokens=100, output_tokens=20))
    host.report(lease, late)
    usage = first_item(host, admitted["batchId"])["receipt"]["usage"]
    assert usage["input"] == 100
    assert usage["output"] == 20
    assert usage["cacheRead"] is None  # never reported: not zero
    assert usage["cost"] is None


def test_an_operation_that_changes_nothing_writes_nothing() -> None:
    w, host, admitted, _ = ready_job()
    request = {"version": 1, "op": "collect", "batchId": admitted["batchId"], "waitMs": 1000}
    host.handle({**request, "afterCursor": 1})
    writes = len(w.fs.calls_of("write_atomic"))
    host.handle({"version": 1, "op": "status"})
    host.handle({**request, "afterCursor": 1})  # waits, re-reading, with nothing to record
    assert len(w.fs.calls_of("write_atomic")) == writes
