"""A workflow's approval receipt (``pi-flows.approval-receipt.v1``): what a person's granted
approval is once given. Single-use, expiring, and bound to what was approved: the workflow
digest, the approval phase, the phases it gates, the agent scope and the resolved handoff policy;
its ``receiptDigest`` is the canonical identity of those terms and its times.

Pure decisions over given times (``now_ms`` comes from the caller's clock): a receipt is
``valid``, ``stale`` (another call or policy), ``expired`` (its TTL passed), ``consumed``
(already spent) or ``invalid`` (malformed, or its digest does not match its terms).
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

from domain.flows.canonical import canonical_sha256

RECEIPT_VERSION = "pi-flows.approval-receipt.v1"


@attrs.frozen
class ReceiptTerms:
    """What an approval is bound to: a change to any of them needs a fresh approval."""

    workflow_digest: str
    phase_id: str
    # The canonical digest of the gated phases' conditions (agents, tasks, gates, tools, cwd,
    # models, contracts, return requirements).
    gated_digest: str
    agent_scope: str
    handoff_policy: str

    def document(self) -> dict[str, Any]:
        return {
            "workflowDigest": self.workflow_digest,
            "phaseId": self.phase_id,
            "gatedDigest": self.gated_digest,
            "agentScope": self.agent_scope,
            "handoffPolicy": self.handoff_policy,
        }


@attrs.frozen
class Receipt:
    terms: ReceiptTerms
    actor: str
    granted_at_ms: int
    expires_at_ms: int
    receipt_digest: str
    consumed_at_ms: int | None = None

    def consumed(self, now_ms: int) -> Receipt:
        return attrs.evolve(self, consumed_at_ms=now_ms)

    def document(self) -> dict[str, Any]:
        return {
            **_granted(self.terms, self.actor, self.granted_at_ms, self.expires_at_ms),
            "receiptDigest": self.receipt_digest,
            "consumedAt": self.consumed_at_ms,
        }


class Standing(enum.StrEnum):
    VALID = "valid"
    STALE = "stale"
    EXPIRED = "expired"
    CONSUMED = "consumed"
    INVALID = "invalid"


def _granted(
    terms: ReceiptTerms, actor: str, granted_at_ms: int, expires_at_ms: int
) -> dict[str, Any]:
    return {
        "schemaVersion": RECEIPT_VERSION,
        **terms.document(),
        "actor": actor,
        "grantedAt": granted_at_ms,
        "expiresAt": expires_at_ms,
    }


def grant(terms: ReceiptTerms, actor: str, now_ms: int, ttl_ms: int) -> Receipt:
    """The receipt of an approval granted at ``now_ms``, unspent, valid ``ttl_ms``."""
    expires = now_ms + ttl_ms
    digest = canonical_sha256(_granted(terms, actor, now_ms, expires))
    return Receipt(terms, actor, now_ms, expires, digest)


_TERMS = ("workflowDigest", "phaseId", "gatedDigest", "agentScope", "handoffPolicy")


def receipt_of(document: object) -> Receipt | None:
    """The receipt a state file holds, or ``None`` when it is malformed: a field missing or
    mistyped, another version, or a ``receiptDigest`` that is not its terms' and times'."""
    if not isinstance(document, dict) or document.get("schemaVersion") != RECEIPT_VERSION:
        return None
    texts = [document.get(key) for key in (*_TERMS, "actor", "receiptDigest")]
    times = [document.get(key) for key in ("grantedAt", "expiresAt")]
    consumed = document.get("consumedAt")
    if not all(isinstance(value, str) and value for value in texts):
        return None
    if not all(_is_time(value) for value in times) or not (consumed is None or _is_time(consumed)):
        return None
    terms = ReceiptTerms(*(document[key] for key in _TERMS))
    receipt = Receipt(
        terms,
        document["actor"],
        document["grantedAt"],
        document["expiresAt"],
        document["receiptDigest"],
        consumed,
    )
    expected = canonical_sha256(
        _granted(terms, receipt.actor, receipt.granted_at_ms, receipt.expires_at_ms)
    )
    if expected != receipt.receipt_digest or receipt.expires_at_ms < receipt.granted_at_ms:
        return None
    return receipt


def _is_time(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def standing(receipt: Receipt | None, terms: ReceiptTerms, now_ms: int) -> Standing:
    """Whether ``receipt`` still authorises the gated phases under ``terms`` at ``now_ms``.
    Spent or malformed comes first (both are hard failures), then a change of terms (the
    consent no longer matches what would run), then expiry."""
    if receipt is None:
        return Standing.INVALID
    if receipt.consumed_at_ms is not None:
        return Standing.CONSUMED
    if receipt.terms != terms:
        return Standing.STALE
    if now_ms >= receipt.expires_at_ms:
        return Standing.EXPIRED
    return Standing.VALID
