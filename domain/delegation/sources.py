"""The source manifest's rules (seed §2, §4): which paths are never captured, which bytes are
text, and how captured bytes and parent observations become issued IDs in the session.

An issued source ID is opaque (random, not derived from the path or hash) and bound to the
hash, size, line count, media type and provenance; capturing the same bytes from the same
origin again returns the same ID. A parent's excerpt gets provenance ``parent_excerpt``, never
mistaken for a host observation. Reading the files is the caller's
(``application/delegation/capture.py``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from domain.delegation.decision import Decision, unchanged
from domain.delegation.envelope import SourceDescriptor
from domain.delegation.errors import DelegationError
from domain.delegation.policy import Grant
from domain.delegation.receipts import (
    MAX_OBSERVATIONS,
    PARENT_OBSERVATION,
    EvidenceReceipt,
    text_sha256,
)
from domain.delegation.request import Observation
from domain.delegation.result import line_count
from domain.delegation.session import SessionState, SourceRecord
from domain.errors import ErrorCode

PRIVATE_NAMES = frozenset(
    {
        ".env",
        ".ssh",
        ".pi",
        ".git",
        ".gnupg",
        ".aws",
        ".netrc",
        ".npmrc",
        ".pypirc",
        "auth.json",
        "credentials.json",
        "id_rsa",
        "id_ed25519",
        "id_ecdsa",
        "id_dsa",
    }
)
PRIVATE_SUFFIXES = (".pem", ".key", ".p12", ".pfx")
MEDIA_TYPE = "text/plain; charset=utf-8"


def private(parts: Sequence[str]) -> bool:
    """Whether a root-relative path (its components) names a private store or credential."""
    return any(
        part in PRIVATE_NAMES or part.startswith(".env.") or part.endswith(PRIVATE_SUFFIXES)
        for part in parts
    )


def text_problem(data: bytes) -> str | None:
    """Why captured bytes are not text a worker may read (``None``: UTF-8 without NUL)."""
    if b"\0" in data:
        return "binary content is not captured"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return "not UTF-8 text"
    return None


@attrs.frozen
class Captured:
    """Bytes to issue as a source: read from ``origin`` under ``root`` (a stable read), or a
    parent's excerpt (no origin)."""

    data: bytes
    provenance: str
    location: str
    origin: str | None = None
    root: str | None = None


@attrs.frozen
class Issued:
    """``capture``'s answer, and the snapshots (``(sha256, bytes)``) the store must hold
    before the state that names them is written."""

    answer: dict[str, Any]
    snapshots: tuple[tuple[str, bytes], ...]


def issue_sources(
    state: SessionState,
    captured: Sequence[Captured],
    observations: tuple[Observation, ...],
    *,
    grant: Grant,
    now_ms: int,
    new_id: Callable[[str], str],
) -> Decision[Issued]:
    if len(state.sources) + len(captured) > grant.max_sources:
        raise DelegationError(
            ErrorCode.DELEGATE_CAPACITY_EXHAUSTED,
            f"the session may hold {grant.max_sources} sources; it has {len(state.sources)}",
        )
    issued: list[dict[str, Any]] = []
    snapshots: list[tuple[str, bytes]] = []
    for each in captured:
        sha256 = hashlib.sha256(each.data).hexdigest()
        existing = next(
            (
                r
                for r in state.sources.values()
                if r.descriptor.sha256 == sha256
                and r.origin == each.origin
                and r.descriptor.location == each.location
            ),
            None,
        )
        if existing is None:
            snapshots.append((sha256, each.data))
            descriptor = SourceDescriptor(
                new_id("src"),
                sha256,
                len(each.data),
                line_count(each.data),
                MEDIA_TYPE,
                each.provenance,
                each.location,
            )
            existing = SourceRecord(descriptor, each.origin, each.root, now_ms)
            state = state.with_source(existing)
        issued.append(existing.descriptor.document())
    receipts = issue_observations(state, observations, now_ms=now_ms, new_id=new_id)
    answer = {"op": "capture", "sources": issued, "receipts": receipts.answer}
    return unchanged(receipts.state, Issued(answer, tuple(snapshots)))


def issue_observations(
    state: SessionState,
    observations: tuple[Observation, ...],
    *,
    now_ms: int,
    new_id: Callable[[str], str],
) -> Decision[list[dict[str, Any]]]:
    """Parent observation receipts (seed §4 row 3): the parent's own words, bound to the
    generation of the issued sources it names (their hashes now). Registering one is the
    parent's act through ``capture``; no worker tool reaches here."""
    bound: list[tuple[tuple[str, str], ...]] = []
    for index, observation in enumerate(observations):
        pairs = []
        for position, source_id in enumerate(observation.source_ids):
            record = state.sources.get(source_id)
            if record is None:
                raise DelegationError(
                    ErrorCode.DELEGATE_SOURCE_UNKNOWN,
                    f"$.parentObservations[{index}].sourceIds[{position}]: source {source_id} was "
                    "not issued by capture in this session",
                )
            pairs.append((source_id, record.descriptor.sha256))
        bound.append(tuple(pairs))
    held = [r for r in state.receipts.values() if r.kind == PARENT_OBSERVATION]
    if len(held) + len(observations) > MAX_OBSERVATIONS:
        raise DelegationError(
            ErrorCode.DELEGATE_CAPACITY_EXHAUSTED,
            f"the session may hold {MAX_OBSERVATIONS} observations; it has {len(held)}",
        )
    issued: list[dict[str, Any]] = []
    for observation, sources in zip(observations, bound, strict=True):
        existing = next(
            (
                r
                for r in held
                if (r.origin, r.result, r.sources)
                == (observation.origin, observation.result, sources)
            ),
            None,
        )
        if existing is None:
            existing = EvidenceReceipt(
                receipt_id=new_id("obs"),
                kind=PARENT_OBSERVATION,
                origin=observation.origin,
                result=observation.result,
                result_sha256=text_sha256(observation.result),
                sources=sources,
                policy_generation=state.policy_generation,
                task_generation=state.task_generation,
                issued_at_ms=now_ms,
            )
            state = state.with_receipt(existing)
            held.append(existing)
        issued.append(existing.document())
    return unchanged(state, issued)
