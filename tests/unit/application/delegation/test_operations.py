"""Each `delegate` operation's rules on the fake worker runtime (seed §2, §6, §7, §9)."""

from __future__ import annotations

from typing import Any

import pytest

from domain.delegation.errors import DelegationError
from domain.delegation.policy import BatchGrant, JobGrant, SessionGrant
from tests.fakes.delegation import PROJECT, outcome, report
from tests.unit.application.delegation.support import (
    CITED_FILE,
    FINDING,
    evidenced_report,
    first_item,
    first_lease,
    follow_up_request,
    job,
    ready_job,
    resolve_request,
    run_request,
    started,
    world,
)


def refused(host: Any, document: dict[str, Any]) -> str:
    with pytest.raises(DelegationError) as error:
        host.handle(document)
    return str(error.value.code)


# -- run -------------------------------------------------------------------------------------


def test_an_exact_active_equivalent_returns_the_existing_job() -> None:
    w = world()
    host = w.host()
    first = started(w, host)
    again = started(w, host)
    assert again["jobs"][0]["deduplicated"] is True
    assert again["jobs"][0]["jobId"] == first["jobs"][0]["jobId"]
    assert again["batchId"] == first["batchId"]
    state = w.store.snapshot("s1")
    assert state is not None
    assert len(state.batches) == 1
    assert state.ledger.reserved == 4  # the duplicate reserved nothing
    changed = started(w, host, job(question="Can the cache keep a stale value? (k1) "))
    assert changed["jobs"][0]["deduplicated"] is False  # one character: a different job


@pytest.mark.parametrize(
    "change",
    [
        {"objective": "find the regression in the cache"},
        {"requirements": [{"id": "R1", "text": "explain the cause and the fix"}]},
        {"jobs": [job(reason="a second opinion")]},
    ],
)
def test_a_run_that_differs_anywhere_in_its_packet_is_a_new_job(change: dict[str, Any]) -> None:
    w = world()
    host = w.host()
    first = started(w, host)
    other = host.handle(run_request(**change))
    assert other["jobs"][0]["deduplicated"] is False
    assert other["jobs"][0]["jobId"] != first["jobs"][0]["jobId"]
    assert other["batchId"] != first["batchId"]


def test_limits_above_the_grant_are_refused_not_clamped() -> None:
    host = world(job=JobGrant(max_requests=2)).host()
    assert refused(host, run_request()) == "DELEGATE_POLICY_DENIED"


def test_ungranted_modes_and_too_many_jobs_are_refused() -> None:
    host = world(modes=("review",)).host()
    assert refused(host, run_request()) == "DELEGATE_POLICY_DENIED"
    host = world(batch=BatchGrant(max_jobs=1)).host()
    assert refused(host, run_request(job("a"), job("b"))) == "DELEGATE_POLICY_DENIED"


def test_recursive_delegation_is_refused() -> None:
    host = world().host(worker_context=True)
    assert refused(host, run_request()) == "DELEGATE_POLICY_DENIED"


def test_reservations_are_exhausted_per_request_before_dispatch() -> None:
    w = world()
    host = w.host()
    admitted = started(w, host)
    lease = first_lease(w, admitted)
    assert [host.authorize_request(lease) for _ in range(5)] == [True] * 4 + [False]


def test_denied_tools_are_refused_and_recorded() -> None:
    w = world()
    host = w.host()
    admitted = started(w, host)
    lease = first_lease(w, admitted)
    for tool in ("bash", "write", "delegate", "read_source"):
        allowed, _ = host.authorize_tool(lease, tool)
        assert allowed is (tool == "read_source")
    host.report(lease, outcome(report()))
    outcomes = first_item(host, admitted["batchId"])["receipt"]["observations"]["toolOutcomes"]
    assert [o["allowed"] for o in outcomes] == [False, False, False, True]


def test_concurrency_counts_settling_slots() -> None:
    w = world(session=SessionGrant(max_active_jobs=1))
    w.runtime.confirms_cancel = False
    host = w.host()
    first = started(w, host, job("a"))
    second = started(w, host, job("b"))
    assert len(w.runtime.starts) == 1
    outcome_ = host.handle({"version": 1, "op": "cancel", "batchId": first["batchId"]})
    assert outcome_["stillSettling"][0]["settlement"] == "uncertain"
    assert len(w.runtime.starts) == 1  # the unconfirmed slot is still taken
    lease = w.runtime.starts[0].lease
    assert host.report(lease, outcome(report()))["published"] is False  # it did finish
    assert [s.lease.batch_id for s in w.runtime.starts] == [first["batchId"], second["batchId"]]


def test_a_worker_that_cannot_start_fails_and_releases_its_reservation() -> None:
    w = world()
    w.runtime.fail_start = True
    host = w.host()
    admitted = started(w, host)
    item = first_item(host, admitted["batchId"])
    assert item["receipt"]["hostStatus"] == "failed"
    assert host.handle({"version": 1, "op": "status"})["ledger"]["reserved"] == 0


# -- collect ---------------------------------------------------------------------------------


def test_collect_never_dequeues_and_an_old_cursor_replays() -> None:
    _, host, admitted, item = ready_job()
    batch = admitted["batchId"]
    request = {"version": 1, "op": "collect", "batchId": batch}
    one = host.handle(request)
    two = host.handle(request)
    assert one["items"] == two["items"]
    cursor = one["collectionCursor"]
    acknowledged = host.handle({**request, "afterCursor": cursor})
    assert acknowledged["items"] == []
    assert acknowledged["acknowledgedCursor"] == cursor
    assert host.handle({**request, "afterCursor": 0})["items"] == one["items"]
    assert item["receipt"]["identity"]["resultRevision"] == 1
    assert refused(host, {**request, "afterCursor": cursor + 1}) == "DELEGATE_CURSOR_INVALID"


def test_collect_waits_at_most_as_asked_and_returns_when_a_result_arrives() -> None:
    w = world()
    host = w.host()
    admitted = started(w, host)
    batch = admitted["batchId"]
    empty = host.handle({"version": 1, "op": "collect", "batchId": batch, "waitMs": 2000})
    assert empty["items"] == []
    assert sum(w.wakeup.waited) == pytest.approx(2.0)
    lease = first_lease(w, admitted)
    w.wakeup.hooks.append(lambda: host.report(lease, outcome(report())))
    w.wakeup.waited.clear()
    got = host.handle({"version": 1, "op": "collect", "batchId": batch, "waitMs": 30_000})
    assert len(got["items"]) == 1
    assert sum(w.wakeup.waited) < 1


def test_expired_and_resolved_payloads_are_advertised_never_silently_empty() -> None:
    _, host, admitted, item = ready_job(session=SessionGrant(retention_ms=60_000))
    batch = admitted["batchId"]
    host.handle(resolve_request(item, "discard"))
    cursor = host.handle({"version": 1, "op": "collect", "batchId": batch})["collectionCursor"]
    host.handle({"version": 1, "op": "collect", "batchId": batch, "afterCursor": cursor})
    replay = host.handle({"version": 1, "op": "collect", "batchId": batch, "afterCursor": 0})
    assert replay["items"] == []
    assert replay["expired"][0]["reason"].startswith("resolved")
    w2, host2, admitted2, _ = ready_job(session=SessionGrant(retention_ms=60_000))
    w2.clock.advance(61)
    late = host2.handle({"version": 1, "op": "collect", "batchId": admitted2["batchId"]})
    assert late["expired"][0]["reason"] == "session retention passed"


# -- follow_up -------------------------------------------------------------------------------


def incomplete_job(
    status: str = "needs_context",
) -> tuple[Any, Any, dict[str, Any], dict[str, Any]]:
    w = world()
    host = w.host()
    admitted = started(w, host)
    lease = first_lease(w, admitted)
    host.authorize_request(lease)
    host.report(lease, outcome(report(status)))
    return w, host, admitted, first_item(host, admitted["batchId"])


def test_follow_up_from_a_context_gap_is_a_new_attempt_under_the_same_job() -> None:
    w, host, admitted, item = incomplete_job()
    answer = host.handle(follow_up_request(item, "context_gap"))
    assert answer["jobId"] == admitted["jobs"][0]["jobId"]
    assert answer["attemptId"] != item["receipt"]["identity"]["attemptId"]
    assert answer["reserved"] == 3  # the job's 4 requests minus the one consumed
    assert answer["deadlineAtMs"] == item["receipt"]["limits"]["admitted"]["deadlineAtMs"]
    packet = w.runtime.packet(answer["jobId"])
    assert packet["priorAttempt"]["addresses"] == "context_gap"
    state = w.store.snapshot("s1")
    assert state is not None
    assert len(state.batches) == 1
    job_record = state.batches[admitted["batchId"]].jobs[0]
    assert [str(a.state) for a in job_record.attempts] == ["incomplete", "running"]


def test_follow_up_idempotency_same_payload_replays_different_payload_is_refused() -> None:
    w, host, _, item = incomplete_job()
    first = host.handle(follow_up_request(item, "context_gap"))
    again = host.handle(follow_up_request(item, "context_gap"))
    assert again == {**first, "replayed": True}
    assert len(w.runtime.starts) == 2
    changed = follow_up_request(item, "context_gap", correction="something else")
    assert refused(host, changed) == "DELEGATE_IDEMPOTENCY_CONFLICT"


def test_follow_up_is_refused_from_any_other_state_and_only_once() -> None:
    _, host, _, item = ready_job()
    assert refused(host, follow_up_request(item, "context_gap")) == "DELEGATE_STATE_REFUSED"
    _, host, _, item = incomplete_job("partial")  # partial without missing: no gap
    assert refused(host, follow_up_request(item, "context_gap")) == "DELEGATE_STATE_REFUSED"
    w, host, admitted, item = incomplete_job()
    host.handle(follow_up_request(item, "context_gap"))
    lease = first_lease(w, admitted)
    host.report(lease, outcome(report("needs_context")))
    second = first_item(host, admitted["batchId"])
    assert refused(host, follow_up_request(second, "context_gap", key="f2")) == (
        "DELEGATE_CAPACITY_EXHAUSTED"
    )


def test_follow_up_from_a_correctable_format_error() -> None:
    w = world()
    host = w.host()
    admitted = started(w, host)
    host.report(first_lease(w, admitted), outcome(b"not json"))
    item = first_item(host, admitted["batchId"])
    assert item["receipt"]["hostStatus"] == "invalid"
    assert refused(host, follow_up_request(item, "context_gap")) == "DELEGATE_STATE_REFUSED"
    assert host.handle(follow_up_request(item, "format_error", key="f2"))["reserved"] == 4


def test_follow_up_needs_settled_resources_and_cannot_revive_cancelled_work() -> None:
    _, host, admitted, item = incomplete_job()
    host.handle({"version": 1, "op": "cancel", "batchId": admitted["batchId"]})
    assert refused(host, follow_up_request(item, "context_gap")) == "DELEGATE_STATE_REFUSED"


def test_a_stale_binding_is_refused() -> None:
    _, host, _, item = incomplete_job()
    wrong = follow_up_request(item, "context_gap", resultRevision=5)
    assert refused(host, wrong) == "DELEGATE_BINDING_STALE"
    wrong = follow_up_request(item, "context_gap", taskGeneration=1)
    assert refused(host, wrong) == "DELEGATE_BINDING_STALE"


# -- resolve ---------------------------------------------------------------------------------


def test_incomplete_invalid_and_failed_results_are_never_accepted() -> None:
    _, host, _, item = incomplete_job()
    assert refused(host, resolve_request(item, "accept")) == "DELEGATE_STATE_REFUSED"
    held = host.handle(resolve_request(item, "needs_check", key="r2"))
    assert held["state"] == "incomplete"
    assert host.handle(resolve_request(item, "discard", key="r3"))["state"] == "discarded"


def test_accept_needs_coverage_and_every_finding_decided() -> None:
    w = world()
    host = w.host()
    admitted = started(w, host)
    finding = {
        "findingId": "f1",
        "claim": "c",
        "trigger": "",
        "consequence": "",
        "basis": "inferred",
        "evidenceIds": [],
        "contraryEvidenceIds": [],
        "limitations": "",
    }
    uncovered = [
        {"requirementId": "R1", "state": "uncovered", "explanation": "", "evidenceIds": []}
    ]
    host.report(
        first_lease(w, admitted),
        outcome(report(findings=[finding], coverage=uncovered)),
    )
    item = first_item(host, admitted["batchId"])
    assert refused(host, resolve_request(item, "accept")) == "DELEGATE_INVALID"
    decided = [{"findingId": "f1", "decision": "needs_check", "reason": "unsure"}]
    assert refused(host, resolve_request(item, "accept", findings=decided)) == (
        "DELEGATE_STATE_REFUSED"
    )


def test_resolve_refuses_evidence_the_job_never_had_naming_it() -> None:
    w = world()
    w.fs.add_file(f"{PROJECT}/{CITED_FILE}", b"def get():\n    return cache[key]\n")
    host = w.host()
    captured = host.handle({"version": 1, "op": "capture", "paths": [CITED_FILE]})
    source_id = captured["sources"][0]["sourceId"]
    admitted = started(w, host, job(sourceIds=[source_id]))
    host.report(first_lease(w, admitted), outcome(evidenced_report(source_id, FINDING)))
    item = first_item(host, admitted["batchId"])

    def decided(*cited: str) -> list[dict[str, Any]]:
        return [
            {"findingId": "f1", "decision": "confirmed", "reason": "r", "evidenceIds": list(cited)}
        ]

    for disposition in ("accept", "needs_check", "discard"):
        with pytest.raises(DelegationError) as error:
            host.handle(resolve_request(item, disposition, findings=decided("e1", "e404")))
        assert error.value.code == "DELEGATE_EVIDENCE_UNKNOWN"
        assert "e404" in error.value.message
    assert host.handle(resolve_request(item, "accept", findings=decided("e1")))["state"] == (
        "accepted"
    )


def test_a_covered_requirement_without_evidence_cannot_be_accepted() -> None:
    w = world()
    host = w.host()
    admitted = started(w, host)
    host.report(first_lease(w, admitted), outcome(report()))  # R1 covered, citing nothing
    item = first_item(host, admitted["batchId"])
    with pytest.raises(DelegationError) as error:
        host.handle(resolve_request(item, "accept"))
    assert error.value.code == "DELEGATE_STATE_REFUSED"
    assert "R1" in error.value.message
    assert host.handle(resolve_request(item, "discard", key="r2"))["state"] == "discarded"


def test_resolve_is_idempotent_and_binds_the_exact_revision() -> None:
    w, host, _, item = ready_job()
    first = host.handle(resolve_request(item, "accept"))
    assert host.handle(resolve_request(item, "accept")) == {**first, "replayed": True}
    assert refused(host, resolve_request(item, "discard")) == "DELEGATE_IDEMPOTENCY_CONFLICT"
    # The accepted result has a new revision: the old binding is stale for a new key.
    assert refused(host, resolve_request(item, "discard", key="r9")) == "DELEGATE_BINDING_STALE"
    assert len(w.runtime.starts) == 1  # nothing was started by the adjudication
