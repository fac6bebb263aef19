"""A workflow's persisted state (``flow-workflow-state-v1``): per phase its status, redacted
output, handoff envelope and content-free attestation; the approval receipts; when it completed.
Written whole after every phase by the host (``WorkflowHost``), read back by ``resume``.

The state is data, never trusted as more: a document that does not match its closed schema is
``WORKFLOW_STATE_INVALID``; a receipt inside it is checked on its own
(``domain.flows.workflow_receipts``), so a malformed receipt is ``APPROVAL_RECEIPT_INVALID``.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from typing import Any, Protocol

import attrs

from domain.spec.schema import describe, violations
from domain.strict_json import JsonDecodeFailure, decode_json

STATE_SCHEMA = "flow-workflow-state-v1"
STATE_VERSION = 1


class PhaseStatus(enum.StrEnum):
    COMPLETED = "completed"
    # An approval granted, its receipt not spent yet (the gated phases have not started).
    APPROVED = "approved"
    AWAITING_APPROVAL = "awaiting-approval"
    # The phase's run or its gate failed; a resume runs it again.
    FAILED = "failed"


@attrs.frozen
class PhaseRecord:
    status: PhaseStatus
    at_ms: int
    agent: str | None = None
    # Redacted and capped, as the caller reads it; ``envelope``: the handoff envelope (JSON)
    # later phases were and will be given.
    output: str | None = None
    envelope: str | None = None
    attestation: dict[str, Any] | None = attrs.field(default=None, eq=False, hash=False)
    error: str | None = None

    def document(self) -> dict[str, Any]:
        found: dict[str, Any] = {"status": str(self.status), "at": self.at_ms}
        optional = {
            "agent": self.agent,
            "output": self.output,
            "envelope": self.envelope,
            "attestation": self.attestation,
            "error": self.error,
        }
        return {**found, **{key: value for key, value in optional.items() if value is not None}}


@attrs.frozen
class WorkflowState:
    workflow_digest: str
    updated_at_ms: int
    phases: Mapping[str, PhaseRecord] = attrs.field(factory=dict, eq=False, hash=False)
    # Receipt documents by approval phase id, as written (checked when used).
    receipts: Mapping[str, Any] = attrs.field(factory=dict, eq=False, hash=False)
    completed_at_ms: int | None = None

    def with_phase(self, phase_id: str, record: PhaseRecord) -> WorkflowState:
        return attrs.evolve(
            self, phases={**self.phases, phase_id: record}, updated_at_ms=record.at_ms
        )

    def with_receipt(self, phase_id: str, receipt: dict[str, Any], now_ms: int) -> WorkflowState:
        return attrs.evolve(
            self, receipts={**self.receipts, phase_id: receipt}, updated_at_ms=now_ms
        )

    def completed(self, phase_id: str) -> PhaseRecord | None:
        record = self.phases.get(phase_id)
        return record if record is not None and record.status is PhaseStatus.COMPLETED else None

    def document(self) -> dict[str, Any]:
        return {
            "schemaVersion": STATE_VERSION,
            "workflowDigest": self.workflow_digest,
            "updatedAt": self.updated_at_ms,
            "completedAt": self.completed_at_ms,
            "phases": {key: record.document() for key, record in self.phases.items()},
            "receipts": dict(self.receipts),
        }

    def encode(self) -> bytes:
        return (json.dumps(self.document(), indent=2, ensure_ascii=False) + "\n").encode("utf-8")


class StateInvalid(Exception):
    """The state file cannot be used: ``reason`` says why, never quoting its content."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def decode(data: bytes) -> WorkflowState:
    """The state a file holds; ``StateInvalid`` for anything but a document of this schema."""
    try:
        document = decode_json(data)
    except JsonDecodeFailure as exc:
        raise StateInvalid(f"it is not strict JSON: {exc}") from None
    found = violations(STATE_SCHEMA, document)
    if found:
        raise StateInvalid(f"it does not match {STATE_SCHEMA}: {describe(found[0])}")
    phases = {
        key: PhaseRecord(
            PhaseStatus(value["status"]),
            value["at"],
            value.get("agent"),
            value.get("output"),
            value.get("envelope"),
            value.get("attestation"),
            value.get("error"),
        )
        for key, value in document["phases"].items()
    }
    return WorkflowState(
        document["workflowDigest"],
        document["updatedAt"],
        phases,
        document["receipts"],
        document["completedAt"],
    )


class WorkflowHost(Protocol):
    """What a workflow needs beyond the dispatch seam: its state file (``path`` relative to
    the flow's cwd, or absolute), the time, and the person (``ask`` answers ``None`` where
    nobody can be asked: headless). ``load``/``save`` raise ``StateInvalid`` when the file
    cannot be read or written; ``save`` replaces it atomically, owner-only."""

    @property
    def actor(self) -> str:
        """Who grants an approval here, as its receipt records it."""
        ...

    def load(self, path: str) -> bytes | None: ...

    def save(self, path: str, data: bytes) -> None: ...

    def now_ms(self) -> int: ...

    def ask(self, title: str, message: str) -> bool | None: ...
