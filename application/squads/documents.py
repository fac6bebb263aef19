"""The JSON shapes of squad records that several commands print: a spec's identity, the
isolation mode with its statement, a review and a cancel. One shape each, so ``status``,
``create``, ``verify``, ``review`` and ``report`` cannot drift apart; and the words of a squad's
status, so ``status`` and the main Pi's widget say the same."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from domain.attestation.timestamps import format_rfc3339_millis
from domain.isolation import isolation_statement
from domain.squad.model import CANCELLED, Actor, Review, SpecRef, Squad


def optional_timestamp(value: datetime | None) -> str | None:
    return None if value is None else format_rfc3339_millis(value)


# Who cancelled a squad, as a person reads it (``Status: cancelled by you (/squad cancel) ...``).
CANCELLED_BY = {
    Actor.PERSON: "you (/squad cancel)",
    Actor.MODEL: "the model (squad_modify)",
    Actor.TERMINAL: "a terminal (pi-squad modify)",
}


def cancellation_document(squad: Squad) -> dict[str, Any] | None:
    """Who cancelled the squad and when (``by``: ``person``, ``model``, ``terminal``, or
    ``null`` on an older record); ``None`` unless a whole-squad cancel stands."""
    if squad.cancelled_at is None:
        return None
    by = None if squad.cancelled_by is None else str(squad.cancelled_by)
    return {"at": format_rfc3339_millis(squad.cancelled_at), "by": by}


def status_words(squad: Squad) -> str:
    """:attr:`Squad.status_word`, and for a cancelled squad who cancelled it and when."""
    at = squad.cancelled_at
    if at is None or squad.status_word != CANCELLED:
        return squad.status_word
    by = "" if squad.cancelled_by is None else f" by {CANCELLED_BY[squad.cancelled_by]}"
    return f"cancelled{by} at {at.astimezone(UTC):%Y-%m-%d %H:%M} UTC"


def spec_document(spec: SpecRef) -> dict[str, Any]:
    return {
        "schemaVersion": spec.schema_version,
        "sha256": spec.sha256,
        "bytes": spec.bytes,
        "path": spec.path,
        "chunkBytes": spec.chunk_bytes,
        "chunkCount": spec.chunk_count,
    }


def isolation_document(mode: str | None, layers: str | None = None) -> dict[str, Any]:
    """``mode`` (``landlock`` or ``none``, as ever), ``layers``: what held for every child, the
    weakest level any child ran under (``namespaces+landlock(ABI 7, scoped)``; ``None`` before
    the first child or where it was not recorded), and the statement saying both in words."""
    return {"mode": mode, "layers": layers, "statement": isolation_statement(mode, layers)}


def review_document(review: Review, *, with_evidence: bool = False) -> dict[str, Any]:
    """The review's state; ``with_evidence`` adds what the orchestrator gave for its verdict."""
    document: dict[str, Any] = {
        "status": str(review.status),
        "verdict": None if review.verdict is None else str(review.verdict),
        "requestedAt": format_rfc3339_millis(review.requested_at),
        "completedAt": optional_timestamp(review.completed_at),
    }
    if with_evidence:
        document["contractChecks"] = list(review.contract_checks)
        document["diffReview"] = review.diff_review
        document["verificationEvidence"] = list(review.verification_evidence)
        document["integrationEvidence"] = review.integration_evidence
    document["issues"] = list(review.issues)
    return document
