"""The host envelope (seed §3): a validated job proposal bound to host identities, the human
grant, the task generation, the captured sources and the effective limits.

The packet is the exact bytes a worker is given (``packet_bytes``: the canonical serialisation
of ``Envelope.packet()``), and ``packetDigest`` is their SHA-256. The packet holds content and
bindings, not the host's identities (batch, job and attempt IDs travel beside it), so two
admissions of the same task under the same grant have the same digest; an omitted input
(no prior attempt, no independence note) is written as ``null``, never left out.
"""

from __future__ import annotations

from typing import Any

import attrs

from domain.delegation.canonical import canonical_bytes, canonical_digest
from domain.delegation.receipts import EvidenceReceipt
from domain.names import camel_fields

PROTOCOL_ID = "pi-squad-delegation-v1"
# The closed broker a worker may use (part 2 implements it); nothing else is ever granted:
# no shell, no file writes, no credentials, no delegation, no memory, no capability changes.
WORKER_TOOLS = ("read_source", "search_source", "cite_receipt")


@attrs.frozen
class SourceDescriptor:
    """One captured source as the envelope binds it: opaque ID, exact hash, media type,
    coverage (the whole captured file) and provenance."""

    source_id: str
    sha256: str
    size: int
    lines: int
    media_type: str
    provenance: str  # "captured" (a host stable read) or "parent_excerpt"
    location: str  # root-relative path, or the excerpt's label

    def document(self) -> dict[str, Any]:
        return {
            "sourceId": self.source_id,
            "sha256": self.sha256,
            "size": self.size,
            "lines": self.lines,
            "mediaType": self.media_type,
            "coverage": "whole",
            "provenance": self.provenance,
            "location": self.location,
        }


@attrs.frozen
class ModelRoute:
    """Bound model identity; the configuration generation stands in for anything sensitive."""

    provider: str | None
    model: str | None
    thinking: str | None
    config_generation: int

    def document(self) -> dict[str, Any]:
        return camel_fields(self)


@attrs.frozen
class EffectiveLimits:
    max_requests: int
    deadline_ms: int
    max_output_bytes: int
    max_tool_calls: int
    deadline_at_ms: int

    def document(self) -> dict[str, Any]:
        return camel_fields(self)

    def bound(self) -> dict[str, Any]:
        """The limits a packet (and a job's dedup key) binds: all but the absolute deadline,
        which differs between two admissions of the same task."""
        return {k: v for k, v in self.document().items() if k != "deadlineAtMs"}


@attrs.frozen
class PriorAttempt:
    attempt_id: str
    outcome: str  # the state it ended in: incomplete or invalid
    addresses: str  # context_gap | format_error
    correction: str
    added_source_ids: tuple[str, ...]

    def document(self) -> dict[str, Any]:
        return {**camel_fields(self), "addedSourceIds": list(self.added_source_ids)}


@attrs.frozen
class TaskContent:
    objective: str
    mode: str
    question: str
    acceptance: str
    decisions: tuple[str, ...]
    non_goals: tuple[str, ...]
    independence: str | None
    parent_alternative: str | None
    reason: str
    requirements: tuple[tuple[str, str], ...]  # (id, text) of the bound requirement set


@attrs.frozen
class Envelope:
    batch_id: str
    job_id: str
    attempt_id: str
    policy_generation: int
    task_generation: int
    model_route: ModelRoute
    limits: EffectiveLimits
    task: TaskContent
    sources: tuple[SourceDescriptor, ...]
    prior_attempt: PriorAttempt | None = None
    # Granted evidence receipts (parent observations, host checks): citable, never sources.
    receipts: tuple[EvidenceReceipt, ...] = ()

    def task_binding(self) -> dict[str, Any]:
        requirements = [{"id": rid, "text": text} for rid, text in self.task.requirements]
        return {
            "kind": "ephemeral",
            "requirementIds": [rid for rid, _ in self.task.requirements],
            "requirementsDigest": canonical_digest(requirements),
        }

    def capabilities(self) -> dict[str, Any]:
        return {
            "tools": list(WORKER_TOOLS),
            "sourceIds": [source.source_id for source in self.sources],
            "receiptIds": [receipt.receipt_id for receipt in self.receipts],
            "network": False,
            "delegate": False,
        }

    def packet(self) -> dict[str, Any]:
        task = self.task
        return {
            "protocol": PROTOCOL_ID,
            "version": 1,
            "policyGeneration": self.policy_generation,
            "taskGeneration": self.task_generation,
            "taskBinding": self.task_binding(),
            "modelRoute": self.model_route.document(),
            "capabilities": self.capabilities(),
            "limits": self.limits.bound(),
            "objective": task.objective,
            "mode": task.mode,
            "question": task.question,
            "acceptance": task.acceptance,
            "decisions": list(task.decisions),
            "nonGoals": list(task.non_goals),
            "independence": task.independence,
            "parentAlternative": task.parent_alternative,
            "reason": task.reason,
            "requirements": [{"id": rid, "text": text} for rid, text in task.requirements],
            "sources": [source.document() for source in self.sources],
            "receipts": [receipt.document() for receipt in self.receipts],
            "priorAttempt": None if self.prior_attempt is None else self.prior_attempt.document(),
        }

    def packet_bytes(self) -> bytes:
        return canonical_bytes(self.packet())

    def packet_digest(self) -> str:
        return canonical_digest(self.packet())

    def document(self) -> dict[str, Any]:
        """The envelope as the parent sees it (``status``, ``collect``, ``run``)."""
        return {
            "version": 1,
            "batchId": self.batch_id,
            "jobId": self.job_id,
            "attemptId": self.attempt_id,
            "policyGeneration": self.policy_generation,
            "taskGeneration": self.task_generation,
            "taskBinding": self.task_binding(),
            "packetDigest": self.packet_digest(),
            "modelRoute": self.model_route.document(),
            "capabilities": self.capabilities(),
            "limits": self.limits.document(),
            "sources": [source.document() for source in self.sources],
            "receipts": [receipt.document() for receipt in self.receipts],
            "priorAttempt": None if self.prior_attempt is None else self.prior_attempt.document(),
        }


def dedup_key(envelope: Envelope) -> str:
    """Exact active equivalence (seed §7): the whole packet the worker would be given (task and
    policy generation, objective, mode, question and acceptance contract, requirement set,
    sources and their hashes, receipts, model route, effective settings), which names no batch,
    job or attempt. Nothing semantic: one changed character anywhere is a different job."""
    return envelope.packet_digest()
