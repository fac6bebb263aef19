"""Requests and worlds the delegation host tests share."""

from __future__ import annotations

from typing import Any

import attrs

from application.ports import WorkerLease
from domain.delegation.policy import Grant, SessionGrant
from tests.fakes.delegation import PROJECT, DelegationWorld, outcome, report

GRANT = Grant(source_roots=(PROJECT,))


def world(**grant_changes: Any) -> DelegationWorld:
    return DelegationWorld(attrs.evolve(GRANT, **grant_changes))


def small_allowance(requests: int) -> dict[str, Any]:
    return {"session": SessionGrant(allowance_requests=requests)}


def job(key: str = "k1", **overrides: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "key": key,
        "mode": "investigate",
        "question": f"Can the cache keep a stale value? ({key})",
        "requirements": ["R1"],
        "sourceIds": [],
        "acceptance": "Name the path and evidence, or what prevents a conclusion.",
        "reason": "independent source investigation",
    }
    document.update(overrides)
    return document


def run_request(*jobs: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "version": 1,
        "op": "run",
        "objective": "find the regression",
        "requirements": [{"id": "R1", "text": "explain the cause"}],
        "jobs": list(jobs) or [job()],
        "limits": {"maxRequests": 4, "deadlineMs": 120_000},
    }
    document.update(overrides)
    return document


def binding(outcome: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    identity = item["receipt"]["identity"]
    return {
        "batchId": identity["batchId"],
        "jobId": identity["jobId"],
        "attemptId": identity["attemptId"],
        "packetDigest": identity["packetDigest"],
        "resultRevision": identity["resultRevision"],
        "taskGeneration": identity["taskGeneration"],
    }


def revoked_when_asked(w: DelegationWorld) -> list[bool]:
    """Filled as the fake runtime is asked to stop a worker: whether the store already held
    that attempt without its lease (revoked before the worker is stopped)."""
    seen: list[bool] = []

    def on_cancel(lease: WorkerLease) -> None:
        state = w.store.snapshot(lease.session)
        assert state is not None
        found = state.find_attempt(lease.attempt_id)
        assert found is not None
        seen.append(found[2].lease is None)

    w.runtime.on_cancel = on_cancel
    return seen


def started(w: DelegationWorld, host: Any, *jobs: dict[str, Any], **overrides: Any) -> Any:
    """Admit a run (its jobs start at once on the fake runtime); the outcome."""
    return host.handle(run_request(*jobs, **overrides))


def first_lease(w: DelegationWorld, admitted: dict[str, Any]) -> WorkerLease:
    """The lease the fake runtime started the run's first job under."""
    return w.runtime.lease(admitted["jobs"][0]["jobId"])


def job_states(host: Any, batch_id: str) -> list[str]:
    """Every job's state, as the batch's ``status`` lists them."""
    status = host.handle({"version": 1, "op": "status", "batchId": batch_id})
    return [row["state"] for row in status["jobs"]]


def states_after_first_report(w: DelegationWorld, host: Any, admitted: dict[str, Any]) -> list[str]:
    """The run's first job reports a well-formed result, which frees its slot: every job's
    state once the host decided on starting the next."""
    host.report(first_lease(w, admitted), outcome(report()))
    return job_states(host, admitted["batchId"])


def cancelled_while_running() -> tuple[DelegationWorld, Any, dict[str, Any], WorkerLease]:
    """One job started and then its batch cancelled: (world, host, the run's answer, the lease
    its worker still holds)."""
    w = world()
    host = w.host()
    admitted = started(w, host)
    lease = first_lease(w, admitted)
    host.handle({"version": 1, "op": "cancel", "batchId": admitted["batchId"]})
    return w, host, admitted, lease


def assert_late_result_dropped(host: Any, batch_id: str, host_status: str) -> None:
    """The batch's first item ended ``host_status`` with no result, and the one result its
    worker reported after that was dropped and counted."""
    item = first_item(host, batch_id)
    assert item["receipt"]["hostStatus"] == host_status
    assert item["result"] is None
    assert item["receipt"]["observations"]["lateResultsDropped"] == 1


def first_item(host: Any, batch_id: str, **extra: Any) -> dict[str, Any]:
    collected = host.handle({"version": 1, "op": "collect", "batchId": batch_id, **extra})
    items: list[dict[str, Any]] = collected["items"]
    return items[0]


CITED_FILE = "cache.py"


FINDING = {
    "findingId": "f1",
    "claim": "the value is never invalidated",
    "trigger": "a write",
    "consequence": "a stale read",
    "basis": "observed",
    "evidenceIds": ["e1"],
    "contraryEvidenceIds": [],
    "limitations": "",
}


def evidenced_report(source_id: str, *findings: dict[str, Any]) -> bytes:
    """A well-formed result covering R1 with evidence e1 (line 2 of the captured ``cache.py``)
    and the given ``findings``."""
    evidence = [{"evidenceId": "e1", "sourceId": source_id, "lineStart": 2, "lineEnd": 2}]
    coverage = [
        {"requirementId": "R1", "state": "covered", "explanation": "x", "evidenceIds": ["e1"]}
    ]
    return report(evidence=evidence, coverage=coverage, findings=list(findings))


def ready_job(**grant: Any) -> tuple[DelegationWorld, Any, dict[str, Any], dict[str, Any]]:
    """One job bound to the captured ``cache.py`` run to a ready result whose coverage cites
    it: (world, host, the run's answer, the collected item)."""
    w = world(**grant)
    w.fs.add_file(f"{PROJECT}/{CITED_FILE}", b"def get():\n    return cache[key]\n")
    host = w.host()
    captured = host.handle({"version": 1, "op": "capture", "paths": [CITED_FILE]})
    source_id = captured["sources"][0]["sourceId"]
    admitted = started(w, host, job(sourceIds=[source_id]))
    host.report(first_lease(w, admitted), outcome(evidenced_report(source_id)))
    return w, host, admitted, first_item(host, admitted["batchId"])


def bound_request(op: str, item: dict[str, Any], key: str, **fields: Any) -> dict[str, Any]:
    """A request bound to the collected ``item``'s exact result, under idempotency ``key``."""
    return {"version": 1, "op": op, **binding({}, item), "idempotencyKey": key, **fields}


def resolve_request(
    item: dict[str, Any], disposition: str, key: str = "r1", **extra: Any
) -> dict[str, Any]:
    fields = {"disposition": disposition, "findings": [], **extra}
    return bound_request("resolve", item, key, **fields)


def follow_up_request(
    item: dict[str, Any], addresses: str, key: str = "f1", **extra: Any
) -> dict[str, Any]:
    fields = {"addresses": addresses, "correction": "the callers are in b.py", **extra}
    return bound_request("follow_up", item, key, **fields)
