"""Evidence kinds beyond snapshot sources (seed §4 rows "Parent observation" and "Host check
receipt"): the parent registers observations through ``capture``, the host issues a check
receipt for each validation it runs on a worker's output; a job may be granted either, its
worker may cite them (``cite_receipt``, result evidence), and nothing a worker sends can
create one or reach one outside its grant."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from application.delegation.broker import BROKER_TOOLS, BrokerRefusal, EvidenceBroker
from domain.delegation.errors import DelegationError
from domain.delegation.policy import SessionGrant
from domain.delegation.receipts import HOST_CHECK, PARENT_OBSERVATION, RESULT_VALIDATOR
from tests.fakes.delegation import PROJECT, DelegationWorld, outcome, report
from tests.unit.application.delegation.support import (
    first_lease,
    job,
    job_states,
    run_request,
    states_after_first_report,
    world,
)

OBSERVED = "pytest -q tests/test_cache.py: 1 failed (test_stale_value), 4 passed"


def observation(**overrides: Any) -> dict[str, Any]:
    return {"origin": "the parent ran pytest in its terminal", "result": OBSERVED, **overrides}


def captured_with_observation(w: DelegationWorld) -> tuple[Any, str, dict[str, Any]]:
    """A host with a.py captured and one observation bound to it: (host, sourceId, receipt)."""
    w.fs.add_file(f"{PROJECT}/a.py", b"cache = {}\n")
    host = w.host()
    [source] = host.handle({"version": 1, "op": "capture", "paths": ["a.py"]})["sources"]
    answer = host.handle(
        {
            "version": 1,
            "op": "capture",
            "parentObservations": [observation(sourceIds=[source["sourceId"]])],
        }
    )
    assert answer["sources"] == []
    [receipt] = answer["receipts"]
    return host, source["sourceId"], receipt


def state_of(w: DelegationWorld) -> Any:
    state = w.store.snapshot("s1")
    assert state is not None
    return state


def result_citing(*evidence: dict[str, Any]) -> bytes:
    coverage = [
        {
            "requirementId": "R1",
            "state": "covered",
            "explanation": "x",
            "evidenceIds": [e["evidenceId"] for e in evidence],
        }
    ]
    return report(evidence=list(evidence), coverage=coverage)


def test_capture_issues_a_parent_observation_receipt_bound_to_its_source_generation() -> None:
    w = world()
    host, source_id, receipt = captured_with_observation(w)
    sha = state_of(w).sources[source_id].descriptor.sha256
    assert receipt["receiptId"].startswith("obs-")
    assert receipt["kind"] == PARENT_OBSERVATION
    # Never presented as the host's own check: authored by the parent, with the seed's limit.
    assert receipt["authoredBy"] == "parent"
    assert receipt["limit"] == "a parent-authored description, not an independently executed check"
    assert receipt["subject"] is None
    assert receipt["checks"] == {}
    assert receipt["result"] == OBSERVED
    assert receipt["resultSha256"] == hashlib.sha256(OBSERVED.encode()).hexdigest()
    assert receipt["sources"] == [{"sourceId": source_id, "sha256": sha}]
    assert receipt["policyGeneration"] == state_of(w).policy_generation
    # The same observation again is the same receipt; a different one is another.
    again = host.handle(
        {"version": 1, "op": "capture", "parentObservations": [observation(sourceIds=[source_id])]}
    )
    assert again["receipts"][0]["receiptId"] == receipt["receiptId"]
    other = host.handle({"version": 1, "op": "capture", "parentObservations": [observation()]})
    assert other["receipts"][0]["receiptId"] != receipt["receiptId"]
    assert other["receipts"][0]["sources"] == []


def test_an_observation_naming_an_unissued_source_is_refused_and_records_nothing() -> None:
    w = world()
    host = w.host()
    with pytest.raises(DelegationError) as refused:
        host.handle(
            {
                "version": 1,
                "op": "capture",
                "parentObservations": [observation(sourceIds=["src-" + "0" * 32])],
            }
        )
    assert refused.value.code == "DELEGATE_SOURCE_UNKNOWN"
    assert "$.parentObservations[0].sourceIds[0]" in str(refused.value)
    assert w.store.snapshot("s1") is None or state_of(w).receipts == {}


@pytest.mark.parametrize(
    "bad",
    [
        [observation(receiptId="obs-" + "0" * 32)],  # a caller cannot name the ID
        [observation(kind=HOST_CHECK)],  # nor claim the host ran it
        [{"origin": "x"}],
        [observation(result="")],
        [observation()] * 17,
    ],
)
def test_observations_are_closed_and_bounded(bad: list[dict[str, Any]]) -> None:
    host = world().host()
    with pytest.raises(DelegationError) as refused:
        host.handle({"version": 1, "op": "capture", "parentObservations": bad})
    assert refused.value.code == "DELEGATE_INVALID"


def test_a_job_is_granted_only_issued_receipts_and_its_packet_binds_them() -> None:
    w = world()
    host, _, receipt = captured_with_observation(w)
    with pytest.raises(DelegationError) as refused:
        host.handle(run_request(job(receiptIds=["obs-" + "f" * 32])))
    assert refused.value.code == "DELEGATE_SOURCE_UNKNOWN"
    assert "$.jobs[0].receiptIds[0]" in str(refused.value)
    assert host.handle({"version": 1, "op": "status"})["ledger"]["reserved"] == 0
    plain = host.handle(run_request(job("plain")))
    granted = host.handle(run_request(job("plain", receiptIds=[receipt["receiptId"]])))
    [row] = granted["jobs"]
    assert row["deduplicated"] is False  # a different grant is a different job
    packet = w.runtime.packet(row["jobId"])
    assert packet["capabilities"]["receiptIds"] == [receipt["receiptId"]]
    assert packet["receipts"] == [receipt]
    assert row["packetDigest"] != plain["jobs"][0]["packetDigest"]
    assert w.runtime.packet(plain["jobs"][0]["jobId"])["receipts"] == []


def test_cite_receipt_returns_a_granted_receipt_and_nothing_outside_the_grant() -> None:
    w = world()
    host, source_id, receipt = captured_with_observation(w)
    other = host.handle(
        {"version": 1, "op": "capture", "parentObservations": [observation(result="other")]}
    )["receipts"][0]
    admitted = host.handle(
        run_request(job(sourceIds=[source_id], receiptIds=[receipt["receiptId"]]))
    )
    broker = EvidenceBroker(w.store, first_lease(w, admitted), w.clock)
    cited = json.loads(broker.cite_receipt({"receiptId": receipt["receiptId"]}))
    assert cited == {"receipt": receipt}
    assert json.loads(broker.cite_receipt({"sourceId": source_id}))["receipt"]["sourceId"] == (
        source_id
    )
    with pytest.raises(BrokerRefusal, match="not one of this job's receipts"):
        broker.cite_receipt({"receiptId": other["receiptId"]})  # issued, not granted
    with pytest.raises(BrokerRefusal, match="not one of this job's receipts"):
        broker.cite_receipt({"receiptId": "obs-" + "0" * 32})  # never issued
    with pytest.raises(BrokerRefusal, match="receiptId"):
        broker.cite_receipt({"sourceId": source_id, "receiptId": receipt["receiptId"]})
    with pytest.raises(BrokerRefusal, match="receiptId, sourceId"):
        broker.cite_receipt({})
    with pytest.raises(BrokerRefusal, match="receiptId"):
        broker.cite_receipt({"receiptId": "../state.json"})


def test_no_worker_tool_registers_an_observation() -> None:
    """The worker's tools are the closed broker; none of them issues a receipt, and a result
    naming a receipt ID the host never issued is invalid (seed: the worker cannot register an
    observation as if the host executed it)."""
    assert BROKER_TOOLS == ("read_source", "search_source", "cite_receipt")
    w = world()
    host, source_id, receipt = captured_with_observation(w)
    admitted = host.handle(run_request(job(sourceIds=[source_id])))
    lease = first_lease(w, admitted)
    broker = EvidenceBroker(w.store, lease, w.clock)
    before = dict(state_of(w).receipts)
    broker.read_source({"sourceId": source_id})
    broker.search_source({"query": "cache"})
    broker.cite_receipt({"sourceId": source_id})
    with pytest.raises(BrokerRefusal):
        broker.cite_receipt({"receiptId": receipt["receiptId"]})  # not granted to this job
    assert state_of(w).receipts == before
    invented = {"evidenceId": "e1", "receiptId": "chk-" + "a" * 32}
    assert host.report(lease, outcome(result_citing(invented)))["state"] == "invalid"
    [(_, _, attempt)] = state_of(w).attempts()
    assert attempt.problem == f"evidence e1: receipt {invented['receiptId']} does not exist"
    assert attempt.validation["references"] == "failed"
    assert attempt.correctable is False


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"lineStart": 1, "lineEnd": 1}, "a receipt is cited whole; lineStart is for sources"),
        ({"byteStart": 0, "byteEnd": 1}, "a receipt is cited whole; byteStart is for sources"),
        ({"quotation": "1 failed"}, "a receipt is cited whole; quotation is for sources"),
        ({"sha256": "0" * 64}, "a receipt is cited whole; sha256 is for sources"),
    ],
)
def test_a_receipt_reference_carries_no_range_hash_or_quotation(
    extra: dict[str, Any], expected: str
) -> None:
    w = world()
    host, _, receipt = captured_with_observation(w)
    admitted = host.handle(run_request(job(receiptIds=[receipt["receiptId"]])))
    lease = first_lease(w, admitted)
    cited = {"evidenceId": "e1", "receiptId": receipt["receiptId"], **extra}
    assert host.report(lease, outcome(result_citing(cited)))["state"] == "invalid"
    assert expected in str(state_of(w).attempts()[0][2].problem)


def test_a_result_citing_an_issued_receipt_outside_the_grant_or_both_kinds_is_invalid() -> None:
    w = world()
    host, source_id, receipt = captured_with_observation(w)
    first = host.handle(run_request(job("a", sourceIds=[source_id])))
    lease = w.runtime.lease(first["jobs"][0]["jobId"])
    cited = {"evidenceId": "e1", "receiptId": receipt["receiptId"]}
    assert host.report(lease, outcome(result_citing(cited)))["state"] == "invalid"
    problem = str(state_of(w).attempts()[0][2].problem)
    assert problem == f"evidence e1: receipt {receipt['receiptId']} is outside this job's grant"
    second = host.handle(run_request(job("b", receiptIds=[receipt["receiptId"]])))
    lease = w.runtime.lease(second["jobs"][0]["jobId"])
    both = {**cited, "sourceId": source_id}
    assert host.report(lease, outcome(result_citing(both)))["state"] == "invalid"
    [attempt] = [a for _, j, a in state_of(w).attempts() if j.key == "b"]
    assert attempt.validation["schema"] == "failed"


def test_a_cited_observation_is_collected_with_the_kinds_the_result_cited() -> None:
    w = world()
    host, source_id, receipt = captured_with_observation(w)
    admitted = host.handle(
        run_request(job(sourceIds=[source_id], receiptIds=[receipt["receiptId"]]))
    )
    lease = first_lease(w, admitted)
    raw = result_citing(
        {"evidenceId": "e1", "sourceId": source_id, "lineStart": 1, "lineEnd": 1},
        {"evidenceId": "e2", "receiptId": receipt["receiptId"]},
    )
    assert host.report(lease, outcome(raw))["state"] == "ready"
    [item] = host.handle({"version": 1, "op": "collect", "batchId": admitted["batchId"]})["items"]
    seen = item["receipt"]["observations"]
    assert seen["citedEvidenceKinds"] == {
        "snapshot_source": 1,
        PARENT_OBSERVATION: 1,
        HOST_CHECK: 0,
    }
    assert seen["evidenceReceipts"] == [receipt]
    assert [s["sourceId"] for s in seen["sourceReceipts"]] == [source_id]  # sources apart


def test_each_validation_issues_a_host_check_receipt_a_later_job_may_cite() -> None:
    w = world()
    host, source_id, observed = captured_with_observation(w)
    first = host.handle(
        run_request(job("a", sourceIds=[source_id], receiptIds=[observed["receiptId"]]))
    )
    lease = w.runtime.lease(first["jobs"][0]["jobId"])
    raw = result_citing({"evidenceId": "e1", "sourceId": source_id, "lineStart": 1, "lineEnd": 1})
    assert host.report(lease, outcome(raw))["state"] == "ready"
    [item] = host.handle({"version": 1, "op": "collect", "batchId": first["batchId"]})["items"]
    check_id = item["receipt"]["observations"]["hostCheckReceipt"]
    check = state_of(w).receipts[check_id].document()
    assert check_id.startswith("chk-")
    assert check["kind"] == HOST_CHECK
    assert check["authoredBy"] == "host"
    assert check["origin"] == RESULT_VALIDATOR
    assert check["result"] == "ready"
    assert check["resultSha256"] == hashlib.sha256(raw).hexdigest()
    assert check["subject"] == lease.attempt_id
    assert check["checks"] == {
        "schema": "passed",
        "references": "passed",
        "coverage": "passed",
        "truncation": "none",
    }
    assert check["sources"] == observed["sources"]
    assert check["receiptIds"] == [observed["receiptId"]]
    assert check["limit"] == "valid only for the recorded check and inputs"
    # A later job in the same session may be granted the check and cite it like any receipt.
    later = host.handle(run_request(job("b", receiptIds=[check_id])))
    later_lease = w.runtime.lease(later["jobs"][0]["jobId"])
    broker = EvidenceBroker(w.store, later_lease, w.clock)
    assert json.loads(broker.cite_receipt({"receiptId": check_id})) == {"receipt": check}
    cited = result_citing({"evidenceId": "e1", "receiptId": check_id})
    assert host.report(later_lease, outcome(cited))["state"] == "ready"
    items = host.handle({"version": 1, "op": "collect", "batchId": later["batchId"]})["items"]
    assert items[0]["receipt"]["observations"]["citedEvidenceKinds"][HOST_CHECK] == 1


def test_an_invalid_result_gets_a_check_receipt_and_a_failed_stop_none() -> None:
    w = world()
    host = w.host()
    admitted = host.handle(run_request(job("a"), job("b")))
    leases = [w.runtime.lease(row["jobId"]) for row in admitted["jobs"]]
    assert host.report(leases[0], outcome(b"not json"))["state"] == "invalid"
    host.report(leases[1], outcome(report(), stop_reason="aborted"))
    by_key = {j.key: a for _, j, a in state_of(w).attempts() if a is j.current}
    check = state_of(w).receipts[by_key["a"].check_receipt]
    assert (check.result, dict(check.checks)["schema"]) == ("invalid", "failed")
    assert by_key["b"].check_receipt is None
    assert len(state_of(w).receipts) == 1


def test_a_changed_source_bound_by_a_granted_observation_stales_the_result() -> None:
    w = world()
    host, _, receipt = captured_with_observation(w)
    admitted = host.handle(run_request(job(receiptIds=[receipt["receiptId"]])))
    host.report(first_lease(w, admitted), outcome(report()))
    w.fs.add_file(f"{PROJECT}/unrelated.py", b"x\n")
    assert job_states(host, admitted["batchId"]) == ["ready"]
    w.fs.add_file(f"{PROJECT}/a.py", b"cache = {'k': 1}\n")
    assert job_states(host, admitted["batchId"]) == ["stale"]


def test_receipts_survive_a_host_restart() -> None:
    w = world()
    _, _, receipt = captured_with_observation(w)
    restarted = w.host()
    admitted = restarted.handle(run_request(job(receiptIds=[receipt["receiptId"]])))
    assert w.runtime.packet(admitted["jobs"][0]["jobId"])["receipts"] == [receipt]


def test_a_capture_naming_host_observations_is_a_forged_field() -> None:
    """``observations`` is the host receipt's own key; the parent's go in ``parentObservations``."""
    host = world().host()
    with pytest.raises(DelegationError) as refused:
        host.handle({"version": 1, "op": "capture", "observations": [observation()]})
    assert refused.value.code == "DELEGATE_FORGED_FIELD"


def test_a_source_bound_by_a_granted_observation_changed_before_start_cancels_the_job() -> None:
    w = world(session=SessionGrant(max_active_jobs=1))
    host, _, receipt = captured_with_observation(w)
    admitted = host.handle(run_request(job("a"), job("b", receiptIds=[receipt["receiptId"]])))
    w.fs.add_file(f"{PROJECT}/a.py", b"cache = {'k': 1}\n")
    assert states_after_first_report(w, host, admitted) == ["ready", "cancelled"]
    assert len(w.runtime.starts) == 1


def test_a_check_over_an_observation_binds_the_observations_source_transitively() -> None:
    """A host check records every source the judged output rested on, those of its granted
    receipts too: a later job citing the check goes stale when the observation's source
    changes, though neither job named that source itself."""
    w = world()
    host, _source_id, observed = captured_with_observation(w)
    first = host.handle(run_request(job("a", receiptIds=[observed["receiptId"]])))
    lease = w.runtime.lease(first["jobs"][0]["jobId"])
    raw = result_citing({"evidenceId": "e1", "receiptId": observed["receiptId"]})
    assert host.report(lease, outcome(raw))["state"] == "ready"
    found = state_of(w).find_attempt(lease.attempt_id)
    assert found is not None
    check_id = found[2].check_receipt
    assert check_id is not None
    assert state_of(w).receipts[check_id].sources == observed_sources(observed)
    later = host.handle(run_request(job("b", receiptIds=[check_id])))
    later_lease = w.runtime.lease(later["jobs"][0]["jobId"])
    cited = result_citing({"evidenceId": "e1", "receiptId": check_id})
    assert host.report(later_lease, outcome(cited))["state"] == "ready"
    w.fs.add_file(f"{PROJECT}/a.py", b"cache = {'k': 1}\n")
    assert job_states(host, later["batchId"]) == ["stale"]


def observed_sources(observed: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple((s["sourceId"], s["sha256"]) for s in observed["sources"])
