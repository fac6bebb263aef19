"""A job's counters belong to the logical job (seed §7): a follow-up's receipt carries the job's
totals, its earlier attempts' requests and tool calls included, next to its own."""

from __future__ import annotations

from tests.fakes.delegation import outcome, report
from tests.unit.application.delegation.support import (
    first_item,
    first_lease,
    follow_up_request,
    started,
    world,
)


def test_a_follow_ups_receipt_carries_the_jobs_totals() -> None:
    w = world()
    host = w.host()
    admitted = started(w, host)
    lease = first_lease(w, admitted)
    for _ in range(2):
        assert host.authorize_request(lease)
    assert host.authorize_tool(lease, "read_source") == (True, "allowed")
    host.report(lease, outcome(report("needs_context")))
    first = first_item(host, admitted["batchId"])
    assert first["receipt"]["jobTotals"]["requests"] == 2
    answer = host.handle(follow_up_request(first, "context_gap"))
    second_lease = w.runtime.lease(answer["jobId"])
    assert host.authorize_request(second_lease)
    host.report(second_lease, outcome(report()))
    item = first_item(host, admitted["batchId"])
    receipt = item["receipt"]
    assert receipt["identity"]["attemptId"] == answer["attemptId"]
    assert receipt["usage"]["requests"] == 1  # this attempt's own
    assert receipt["jobTotals"]["attempts"] == 2
    assert receipt["jobTotals"]["requests"] == 3  # the earlier attempt's two as well
    assert receipt["jobTotals"]["toolCalls"] == 1
