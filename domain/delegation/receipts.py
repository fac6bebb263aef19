"""Evidence receipts beyond snapshot sources (seed §4, rows "Parent observation" and "Host
check receipt"): host-issued records a job may be granted and its worker may cite.

A receipt ID is host-owned and opaque, like a source ID: the parent registers an observation
only through ``capture``, the host issues a check receipt only when it validated a worker's
result, and no worker tool creates either (a worker can only cite a receipt it was granted).
Each receipt states who authored it (``parent`` or ``host``) and the limit of what it shows, so
a parent's description is never presented as a check the host executed.
"""

from __future__ import annotations

import hashlib
from typing import Any

import attrs

PARENT_OBSERVATION = "parent_observation"
HOST_CHECK = "host_check"
# The fixed identity of the one check the host runs on a worker's output
# (domain/delegation/result.py judge_output); a new check gets a new identity.
RESULT_VALIDATOR = "pi-squad/delegate-result-validator@1"
# The seed's "limit of the evidence" for each kind, carried by every receipt of that kind.
LIMITS = {
    PARENT_OBSERVATION: "a parent-authored description, not an independently executed check",
    HOST_CHECK: "valid only for the recorded check and inputs",
}
AUTHORS = {PARENT_OBSERVATION: "parent", HOST_CHECK: "host"}
# Parent observations a session may hold; host check receipts are bounded by the attempts.
MAX_OBSERVATIONS = 256


@attrs.frozen
class EvidenceReceipt:
    """One receipt. ``origin``: where the parent says it observed the result, or the
    validator identity; ``result``: the observed result, or the check's outcome;
    ``result_sha256``: SHA-256 of the observation's UTF-8 text, or of the checked output bytes;
    ``sources``: the bound source generation as ``(sourceId, sha256)`` pairs; ``subject``: the
    attempt a host check judged; ``checks``: the validation steps and their outcomes."""

    receipt_id: str
    kind: str
    origin: str
    result: str
    result_sha256: str
    sources: tuple[tuple[str, str], ...]
    policy_generation: int
    task_generation: int
    issued_at_ms: int
    receipt_ids: tuple[str, ...] = ()
    subject: str | None = None
    checks: tuple[tuple[str, str], ...] = ()

    @property
    def source_ids(self) -> tuple[str, ...]:
        return tuple(source_id for source_id, _ in self.sources)

    def document(self) -> dict[str, Any]:
        return {
            "receiptId": self.receipt_id,
            "kind": self.kind,
            "authoredBy": AUTHORS[self.kind],
            "origin": self.origin,
            "result": self.result,
            "resultSha256": self.result_sha256,
            "sources": [{"sourceId": sid, "sha256": sha} for sid, sha in self.sources],
            "receiptIds": list(self.receipt_ids),
            "subject": self.subject,
            "checks": dict(self.checks),
            "policyGeneration": self.policy_generation,
            "taskGeneration": self.task_generation,
            "issuedAtMs": self.issued_at_ms,
            "limit": LIMITS[self.kind],
        }


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def host_check(
    receipt_id: str,
    *,
    subject: str,
    outcome: str,
    checked: bytes,
    checks: dict[str, str],
    sources: tuple[tuple[str, str], ...],
    receipt_ids: tuple[str, ...],
    policy_generation: int,
    task_generation: int,
    issued_at_ms: int,
) -> EvidenceReceipt:
    """The host's receipt for one validation of a worker's output: the fixed validator, its
    actual outcome, the digest of the exact bytes it judged and the inputs it judged them
    against (the job's sources at their hashes, the receipts it was granted)."""
    return EvidenceReceipt(
        receipt_id=receipt_id,
        kind=HOST_CHECK,
        origin=RESULT_VALIDATOR,
        result=outcome,
        result_sha256=hashlib.sha256(checked).hexdigest(),
        sources=sources,
        policy_generation=policy_generation,
        task_generation=task_generation,
        issued_at_ms=issued_at_ms,
        receipt_ids=receipt_ids,
        subject=subject,
        checks=tuple(sorted(checks.items())),
    )
