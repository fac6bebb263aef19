"""Requests and worlds the delegation host tests share."""

from __future__ import annotations

from typing import Any

import attrs

from domain.delegation.policy import Grant, SessionGrant
from tests.fakes.delegation import PROJECT, DelegationWorld

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


def started(w: DelegationWorld, host: Any, *jobs: dict[str, Any], **overrides: Any) -> Any:
    """Admit a run (its jobs start at once on the fake runtime); the outcome."""
    return host.handle(run_request(*jobs, **overrides))


def first_item(host: Any, batch_id: str, **extra: Any) -> dict[str, Any]:
    collected = host.handle({"version": 1, "op": "collect", "batchId": batch_id, **extra})
    items: list[dict[str, Any]] = collected["items"]
    return items[0]


def resolve_request(
    item: dict[str, Any], disposition: str, key: str = "r1", **extra: Any
) -> dict[str, Any]:
    return {
        "version": 1,
        "op": "resolve",
        **binding({}, item),
        "idempotencyKey": key,
        "disposition": disposition,
        "findings": [],
        **extra,
    }


def follow_up_request(
    item: dict[str, Any], addresses: str, key: str = "f1", **extra: Any
) -> dict[str, Any]:
    return {
        "version": 1,
        "op": "follow_up",
        **binding({}, item),
        "idempotencyKey": key,
        "addresses": addresses,
        "correction": "the callers are in b.py",
        **extra,
    }
