"""The `delegate` host end to end on fakes: capture, run, a scripted worker, collect, resolve,
with the state in the real file store on an in-memory file system."""

from __future__ import annotations

from typing import Any

import pytest

from domain.delegation.errors import DelegationError
from tests.fakes.delegation import PROJECT, outcome, report
from tests.unit.application.delegation.support import binding, job, run_request, world


def collect(host: Any, batch_id: str, **extra: Any) -> dict[str, Any]:
    result: dict[str, Any] = host.handle(
        {"version": 1, "op": "collect", "batchId": batch_id, **extra}
    )
    return result


def test_vertical_slice_capture_run_collect_resolve() -> None:
    w = world()
    w.fs.add_file(f"{PROJECT}/cache.py", b"def get():\n    return cache[key]\n")
    host = w.host()
    captured = host.handle({"version": 1, "op": "capture", "paths": ["cache.py"]})
    source = captured["sources"][0]
    assert source["provenance"] == "captured"
    assert source["lines"] == 2
    admitted = host.handle(run_request(job(sourceIds=[source["sourceId"]])))
    batch_id = admitted["batchId"]
    [row] = admitted["jobs"]
    assert admitted["effectiveLimits"]["maxRequests"] == 4
    # The worker was started with the canonical packet whose digest the parent was given.
    packet = w.runtime.packet(row["jobId"])
    assert packet["sources"][0]["sha256"] == source["sha256"]
    lease = w.runtime.lease(row["jobId"])
    assert host.authorize_request(lease)
    assert host.authorize_tool(lease, "read_source") == (True, "allowed")
    evidence = [
        {
            "evidenceId": "e1",
            "sourceId": source["sourceId"],
            "lineStart": 2,
            "lineEnd": 2,
            "quotation": "return cache[key]",
        }
    ]
    coverage = [
        {"requirementId": "R1", "state": "covered", "explanation": "x", "evidenceIds": ["e1"]}
    ]
    findings = [
        {
            "findingId": "f1",
            "claim": "no invalidation",
            "trigger": "t",
            "consequence": "c",
            "basis": "observed",
            "evidenceIds": ["e1"],
            "contraryEvidenceIds": [],
            "limitations": "",
        }
    ]
    published = host.report(
        lease, outcome(report(evidence=evidence, coverage=coverage, findings=findings))
    )
    assert published == {"published": True, "state": "ready"}
    collected = collect(host, batch_id)
    [item] = collected["items"]
    assert item["receipt"]["hostStatus"] == "ready"
    assert item["result"]["findings"][0]["findingId"] == "f1"
    assert item["receipt"]["usage"]["requests"] == 1
    resolved = host.handle(
        {
            "version": 1,
            "op": "resolve",
            **binding(admitted, item),
            "idempotencyKey": "r1",
            "disposition": "accept",
            "findings": [{"findingId": "f1", "decision": "confirmed", "reason": "read it"}],
        }
    )
    assert resolved["state"] == "accepted"
    assert resolved["authorizesAction"] is False
    status = host.handle({"version": 1, "op": "status"})
    assert status["ledger"]["consumed"] == 1
    assert status["ledger"]["reserved"] == 0


def test_refusals_reserve_nothing() -> None:
    w = world()
    host = w.host()
    with pytest.raises(DelegationError) as refused:
        host.handle(run_request(job(sourceIds=["src-00000000000000ff"])))
    assert refused.value.code == "DELEGATE_SOURCE_UNKNOWN"
    state = w.store.snapshot("s1")
    assert state is None or state.batches == {}
