"""The parent's request: untrusted, closed, versioned (seed §1-§2).

:func:`parse_request` checks, in this order, so every refusal is deterministic: a JSON object;
``version`` is exactly the integer 1 (``DELEGATE_VERSION_UNSUPPORTED``); ``op`` names an
operation; no host-owned field anywhere a model could put one (``DELEGATE_FORGED_FIELD``: a
model cannot replace an envelope field by sending it); then the op's closed schema
(``delegate-<op>-v1``: unknown fields, types and bounds, ``DELEGATE_INVALID``), structured
through the one input converter (``domain.inputs``).
"""

from __future__ import annotations

from typing import Any

import attrs

from domain.delegation.errors import DelegationError
from domain.errors import ErrorCode
from domain.input_errors import InputRejected
from domain.inputs import parse_input
from domain.strict_json import json_type_name

PROTOCOL_VERSION = 1

# Every field the host owns (envelope, receipt, identity): refused wherever a request or a job
# proposal carries it, except the binding fields an op takes as its input.
HOST_OWNED = frozenset(
    {
        "batchId",
        "jobId",
        "attemptId",
        "policyGeneration",
        "taskGeneration",
        "taskBinding",
        "packetDigest",
        "modelRoute",
        "capabilities",
        "effectiveLimits",
        "sources",
        "priorAttempt",
        "resultRevision",
        "hostStatus",
        "receipt",
        "identity",
        "observations",
        "usage",
        "validation",
        "collectionCursor",
        "settlement",
        "envelope",
    }
)


@attrs.frozen
class Requirement:
    id: str
    text: str


@attrs.frozen
class JobProposal:
    key: str
    mode: str
    question: str
    requirements: tuple[str, ...]
    source_ids: tuple[str, ...]
    acceptance: str
    reason: str
    decisions: tuple[str, ...] = ()
    non_goals: tuple[str, ...] = ()
    independence: str | None = None
    parent_alternative: str | None = None
    # Issued evidence receipts (parent observations, host checks) the worker may cite.
    receipt_ids: tuple[str, ...] = ()


@attrs.frozen
class RequestedLimits:
    max_requests: int
    deadline_ms: int
    max_output_bytes: int | None = None


@attrs.frozen
class RunRequest:
    version: int
    op: str
    objective: str
    requirements: tuple[Requirement, ...]
    jobs: tuple[JobProposal, ...]
    limits: RequestedLimits
    idempotency_key: str | None = None


@attrs.frozen
class StatusRequest:
    version: int
    op: str
    batch_id: str | None = None


@attrs.frozen
class CollectRequest:
    version: int
    op: str
    batch_id: str
    job_ids: tuple[str, ...] = ()
    after_cursor: int | None = None
    wait_ms: int = 0


@attrs.frozen
class Binding:
    """The exact result identity follow-up and resolve bind to."""

    batch_id: str
    job_id: str
    attempt_id: str
    packet_digest: str
    result_revision: int
    task_generation: int


@attrs.frozen
class BoundRequest(Binding):
    """A request that acts on one exact result: its binding, and the key that makes it
    idempotent."""

    version: int
    op: str
    idempotency_key: str


@attrs.frozen
class FollowUpRequest(BoundRequest):
    addresses: str
    correction: str
    source_ids: tuple[str, ...] = ()


@attrs.frozen
class FindingDecision:
    finding_id: str
    decision: str
    reason: str
    evidence_ids: tuple[str, ...] = ()


@attrs.frozen
class ResolveRequest(BoundRequest):
    disposition: str
    findings: tuple[FindingDecision, ...]
    reason: str | None = None


@attrs.frozen
class CancelRequest:
    version: int
    op: str
    batch_id: str
    job_id: str | None = None
    idempotency_key: str | None = None


@attrs.frozen
class Excerpt:
    label: str
    text: str


@attrs.frozen
class Observation:
    """What the parent says it observed (and where), bound to issued sources when relevant;
    the host records it as a parent observation receipt, never as its own check."""

    origin: str
    result: str
    source_ids: tuple[str, ...] = ()


@attrs.frozen
class CaptureRequest:
    version: int
    op: str
    paths: tuple[str, ...] = ()
    excerpts: tuple[Excerpt, ...] = ()
    # Not `observations`: that name is the host receipt's, refused as a forged field.
    parent_observations: tuple[Observation, ...] = ()


Request = (
    RunRequest
    | StatusRequest
    | CollectRequest
    | FollowUpRequest
    | ResolveRequest
    | CancelRequest
    | CaptureRequest
)

OPERATIONS: dict[str, tuple[str, type[Any]]] = {
    "run": ("delegate-run-v1", RunRequest),
    "status": ("delegate-status-v1", StatusRequest),
    "collect": ("delegate-collect-v1", CollectRequest),
    "follow_up": ("delegate-follow-up-v1", FollowUpRequest),
    "resolve": ("delegate-resolve-v1", ResolveRequest),
    "cancel": ("delegate-cancel-v1", CancelRequest),
    "capture": ("delegate-capture-v1", CaptureRequest),
}
_BINDING_FIELDS = frozenset(
    {"batchId", "jobId", "attemptId", "packetDigest", "resultRevision", "taskGeneration"}
)
# The host-owned names each op legitimately takes as input.
_OWN_INPUT = {
    "status": frozenset({"batchId"}),
    "collect": frozenset({"batchId"}),
    "follow_up": _BINDING_FIELDS,
    "resolve": _BINDING_FIELDS,
    "cancel": frozenset({"batchId", "jobId"}),
}


def _forged(document: dict[str, Any], op: str) -> list[str]:
    allowed = _OWN_INPUT.get(op, frozenset())
    found = [f"$.{key}" for key in document if key in HOST_OWNED and key not in allowed]
    jobs = document.get("jobs") if op == "run" else None
    if isinstance(jobs, list):
        for index, job in enumerate(jobs):
            if isinstance(job, dict):
                found += [f"$.jobs[{index}].{key}" for key in job if key in HOST_OWNED]
    return found


def parse_request(document: object) -> Request:
    if not isinstance(document, dict):
        raise DelegationError(
            ErrorCode.DELEGATE_INVALID,
            f"a delegate request is a JSON object, not {json_type_name(document)}",
        )
    version = document.get("version")
    if type(version) is not int or version != PROTOCOL_VERSION:
        shown = version if type(version) is int else json_type_name(version)
        raise DelegationError(
            ErrorCode.DELEGATE_VERSION_UNSUPPORTED,
            f"$.version: protocol version {shown} is not supported; this host speaks version "
            f"{PROTOCOL_VERSION} only",
        )
    op = document.get("op")
    if not isinstance(op, str) or op not in OPERATIONS:
        raise DelegationError(
            ErrorCode.DELEGATE_INVALID,
            f"$.op: must be one of {', '.join(OPERATIONS)}",
        )
    forged = _forged(document, op)
    if forged:
        raise DelegationError(
            ErrorCode.DELEGATE_FORGED_FIELD,
            f"host-owned field(s) {', '.join(forged)} cannot be set by a request: the host "
            "creates identities, generations, digests, routes, capabilities and sources",
        )
    schema, cls = OPERATIONS[op]
    try:
        request: Request = parse_input(schema, document, cls)
    except InputRejected as rejected:
        raise DelegationError(ErrorCode.DELEGATE_INVALID, "; ".join(rejected.problems)) from None
    return request
