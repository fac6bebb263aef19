"""``delegate status`` says why each job ended without a usable result (issue 30): a failed job's
failure kind and Pi's message, an invalid one's problem, a cancelled one's cause; a job at work
or with a standing result has no reason."""

from __future__ import annotations

from typing import Any

from tests.fakes.delegation import outcome, report
from tests.unit.application.delegation.support import first_lease, job, started, world


def rows(host: Any, batch_id: str) -> list[dict[str, Any]]:
    status = host.handle({"version": 1, "op": "status", "batchId": batch_id})
    return list(status["jobs"])


def test_status_gives_each_failed_or_refused_jobs_reason() -> None:
    w = world()
    host = w.host()
    admitted = started(w, host, job("a"), job("b"))
    failing, invalid = (w.runtime.lease(row["jobId"]) for row in admitted["jobs"])
    host.report(failing, outcome(b"", stop_reason="error", error_message="400 bad request"))
    host.report(invalid, outcome(b"not json"))
    failed_row, invalid_row = rows(host, admitted["batchId"])
    assert failed_row["state"] == "failed"
    assert "400 bad request" in failed_row["reason"]
    assert failed_row["reason"].startswith("provider_error")
    assert invalid_row["state"] == "invalid"
    assert invalid_row["reason"]


def test_a_working_or_ready_job_has_no_reason_and_a_cancelled_one_says_why() -> None:
    w = world()
    host = w.host()
    admitted = started(w, host)
    assert rows(host, admitted["batchId"])[0]["reason"] is None  # running
    host.report(first_lease(w, admitted), outcome(report()))
    assert rows(host, admitted["batchId"])[0]["reason"] is None  # ready
    other = started(w, host, job("c"))
    host.handle({"version": 1, "op": "cancel", "batchId": other["batchId"]})
    [cancelled] = rows(host, other["batchId"])
    assert cancelled["state"] == "cancelled"
    assert cancelled["reason"]
