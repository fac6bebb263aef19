"""Host retries of classified transient failures (issue 18 item 5; seed §7, §8), on the fake
worker runtime and the fake clock: a retry is a new attempt under the same job with a fresh
worker, consumes a request from the job's reservation, stays inside the original deadline, is
recorded in the receipt, and never publishes the failed attempt's output."""

from __future__ import annotations

from typing import Any

from application.ports import WorkerLease
from domain.delegation.retry import MAX_TRANSIENT_RETRIES, RETRY_BACKOFF_MS
from domain.usage import Usage
from tests.fakes.delegation import DelegationWorld, outcome, report
from tests.unit.application.delegation.support import (
    first_item,
    first_lease,
    follow_up_request,
    started,
    world,
)

TRANSIENT = "503 Service Unavailable"


def _error(message: str = TRANSIENT, raw: bytes = b"", **kwargs: Any) -> Any:
    return outcome(raw, stop_reason="error", error_message=message, **kwargs)


def _usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    one = Usage.turn(input_tokens=input_tokens, output_tokens=output_tokens)
    return {"usage": one, "per_request": (one,)}


def _begin(**limits: int) -> tuple[DelegationWorld, Any, dict[str, Any], WorkerLease]:
    w = world()
    host = w.host()
    admitted = started(w, host, limits={"maxRequests": 4, "deadlineMs": 120_000, **limits})
    lease = first_lease(w, admitted)
    assert host.authorize_request(lease)  # the first request, as the runtime admits it
    return w, host, admitted, lease


def _collect(host: Any, batch_id: str) -> dict[str, Any]:
    collected: dict[str, Any] = host.handle({"version": 1, "op": "collect", "batchId": batch_id})
    return collected


def test_a_transient_failure_then_success_is_two_attempts_in_one_receipt() -> None:
    w, host, admitted, first = _begin()
    # The failed attempt streamed something that parses: it must never be published.
    failed = _error(raw=report(answer="from the failed attempt"), **_usage(10, 2))
    assert host.report(first, failed)["published"] is False
    pending = _collect(host, admitted["batchId"])
    assert pending["items"] == []
    assert pending["pending"] == [admitted["jobs"][0]["jobId"]]
    # A fresh worker: a new attempt and lease, the same packet, after the backoff.
    assert len(w.runtime.starts) == 2
    retry = w.runtime.starts[1]
    assert retry.lease.attempt_id != first.attempt_id
    assert retry.lease.token != first.token
    assert retry.lease.job_id == first.job_id
    assert retry.packet == w.runtime.starts[0].packet
    assert 0 < retry.delay_ms <= RETRY_BACKOFF_MS
    assert (
        retry.envelope.limits.deadline_at_ms == w.runtime.starts[0].envelope.limits.deadline_at_ms
    )
    # The old lease is dead: its late calls are refused.
    assert host.authorize_request(first) is False
    assert host.authorize_request(retry.lease)  # the retry is a new request
    host.report(retry.lease, outcome(report(), **_usage(20, 5)))
    item = first_item(host, admitted["batchId"])
    receipt = item["receipt"]
    assert receipt["hostStatus"] == "ready"
    assert item["result"]["answer"] == "the answer"
    assert receipt["identity"]["attemptId"] == retry.lease.attempt_id
    attempts = receipt["attempts"]
    assert [a["hostStatus"] for a in attempts] == ["failed", "ready"]
    assert attempts[0]["stopReason"] == "error"
    assert attempts[0]["failure"]["classification"] == "transient"
    assert attempts[0]["failure"]["errorMessage"] == TRANSIENT
    assert attempts[0]["failure"]["retry"].startswith("retried after")
    assert attempts[1]["retryOf"] == first.attempt_id
    assert attempts[1]["possibleDuplicateBilling"] is True
    assert receipt["observations"]["hostRetries"] == 1
    # Usage totals are the sum of both attempts; each request counted once.
    usage = receipt["usage"]
    assert (usage["input"], usage["output"], usage["requests"]) == (30, 7, 2)
    assert [r["input"] for r in usage["perRequest"]] == [10, 20]
    assert receipt["limits"]["consumed"] == 2
    ledger = host.handle({"version": 1, "op": "status"})["ledger"]
    assert (ledger["consumed"], ledger["reserved"]) == (2, 0)


def test_a_transient_failure_with_no_time_left_is_not_retried_and_names_the_deadline() -> None:
    w, host, admitted, lease = _begin()
    w.clock.advance(115)  # 5 s left of 120: less than the backoff and a minimal run
    host.report(lease, _error())
    assert len(w.runtime.starts) == 1
    receipt = first_item(host, admitted["batchId"])["receipt"]
    assert receipt["hostStatus"] == "failed"
    assert receipt["observations"]["failure"]["classification"] == "transient"
    assert "the job deadline leaves" in receipt["problem"]
    assert "deadline" in receipt["observations"]["failure"]["retry"]
    assert receipt["observations"]["hostRetries"] == 0


def test_a_transient_failure_with_no_request_left_is_not_retried() -> None:
    w, host, admitted, lease = _begin(maxRequests=1)
    host.report(lease, _error())
    assert len(w.runtime.starts) == 1
    receipt = first_item(host, admitted["batchId"])["receipt"]
    assert receipt["hostStatus"] == "failed"
    assert "model-request limit has no request left" in receipt["problem"]
    assert receipt["usage"]["requests"] == 1


def test_a_permanent_error_is_never_retried() -> None:
    w, host, admitted, lease = _begin()
    host.report(lease, _error("400 Bad Request: invalid tool schema"))
    assert len(w.runtime.starts) == 1
    receipt = first_item(host, admitted["batchId"])["receipt"]
    assert receipt["hostStatus"] == "failed"
    failure = receipt["observations"]["failure"]
    assert failure["classification"] == "permanent"
    assert failure["retry"] == "a permanent failure is not retried"
    # Its unused reservation returns to the session.
    assert host.handle({"version": 1, "op": "status"})["ledger"]["reserved"] == 0


def test_error_and_aborted_stops_fail_even_with_valid_output_and_aborted_is_final() -> None:
    for stop in ("aborted", "error"):
        w, host, admitted, lease = _begin()
        # A resolved stream with a valid result but a failed stop: failure, nothing published.
        host.report(lease, outcome(report(), stop_reason=stop))
        item = first_item(host, admitted["batchId"])
        assert item["receipt"]["hostStatus"] == "failed"
        assert item["result"] is None
        assert item["receipt"]["observations"]["stopReason"] == stop
        assert len(w.runtime.starts) == 1  # aborted is final; error without a message too


def test_retries_stop_after_the_jobs_retry_count() -> None:
    w, host, admitted, lease = _begin(maxRequests=8)
    for _ in range(MAX_TRANSIENT_RETRIES + 1):
        host.report(lease, _error(**_usage(1, 1)))
        lease = w.runtime.starts[-1].lease
        host.authorize_request(lease)
    assert len(w.runtime.starts) == MAX_TRANSIENT_RETRIES + 1
    receipt = first_item(host, admitted["batchId"])["receipt"]
    assert receipt["hostStatus"] == "failed"
    assert len(receipt["attempts"]) == MAX_TRANSIENT_RETRIES + 1
    assert "retries are used" in receipt["observations"]["failure"]["retry"]
    assert receipt["usage"]["input"] == MAX_TRANSIENT_RETRIES + 1
    # The backoff doubles (less the fake clock's few milliseconds between record and start).
    for n, start in enumerate(w.runtime.starts[1:]):
        assert RETRY_BACKOFF_MS * 2**n - 10 < start.delay_ms <= RETRY_BACKOFF_MS * 2**n


def test_a_worker_that_died_before_its_first_response_is_retried_after_one_is_not() -> None:
    w, host, _, lease = _begin()
    host.report(lease, outcome(b"", stop_reason="error", failure="exited", responses=0))
    assert len(w.runtime.starts) == 2
    w, host, admitted, lease = _begin()
    host.report(lease, outcome(b"", stop_reason="error", failure="exited", responses=1))
    assert len(w.runtime.starts) == 1
    failure = first_item(host, admitted["batchId"])["receipt"]["observations"]["failure"]
    assert (failure["kind"], failure["classification"]) == ("exited", "permanent")


def test_a_worker_that_exits_after_a_refused_request_stopped_at_the_request_limit() -> None:
    """Its shim kills it for the refusal: the receipt says request_limit, never a transient
    exit, and no retry starts."""
    w, host, admitted, lease = _begin(maxRequests=2)
    assert host.authorize_request(lease)  # the second and last request
    assert not host.authorize_request(lease)  # the third is refused: the shim kills it
    host.report(lease, outcome(b"", stop_reason="error", failure="exited", responses=0))
    assert len(w.runtime.starts) == 1
    receipt = first_item(host, admitted["batchId"])["receipt"]
    assert receipt["observations"]["stopReason"] == "aborted"
    assert receipt["observations"]["failure"]["kind"] == "request_limit"
    assert receipt["usage"]["requests"] == 2


def test_a_cancel_reaches_the_retry_and_its_late_report_is_dropped() -> None:
    w, host, admitted, lease = _begin()
    host.report(lease, _error())
    retry = w.runtime.starts[1].lease
    cancelled = host.handle({"version": 1, "op": "cancel", "batchId": admitted["batchId"]})
    assert cancelled["cancelled"] == [admitted["jobs"][0]["jobId"]]
    assert w.runtime.cancelled[-1] == retry
    assert host.report(retry, outcome(report()))["published"] is False
    item = first_item(host, admitted["batchId"])
    assert item["receipt"]["hostStatus"] == "cancelled"
    assert item["result"] is None
    assert host.handle({"version": 1, "op": "status"})["ledger"]["reserved"] == 0


def test_the_retry_allowance_is_per_job_and_a_follow_up_does_not_renew_it() -> None:
    """Seed §7: at most ``MAX_TRANSIENT_RETRIES`` host retries in one job, follow-ups included
    (a follow-up is a new attempt, not a new allowance)."""
    w, host, admitted, first = _begin(maxRequests=8, deadlineMs=600_000)
    host.report(first, _error())  # retry 1
    retried = w.runtime.starts[-1].lease
    assert host.authorize_request(retried)
    host.report(retried, outcome(b"not json"))  # invalid, correctable
    item = first_item(host, admitted["batchId"])
    host.handle(follow_up_request(item, "format_error"))
    leases = []
    for _ in range(MAX_TRANSIENT_RETRIES + 1):
        lease = w.runtime.starts[-1].lease
        if lease in leases or not host.authorize_request(lease):
            break
        leases.append(lease)
        host.report(lease, _error())
    state = w.store.snapshot("s1")
    assert state is not None
    (job,) = next(iter(state.batches.values())).jobs
    retries = [a for a in job.attempts if a.retry_of is not None]
    assert len(retries) == MAX_TRANSIENT_RETRIES
    assert job.attempts[-1].state.value == "failed"
