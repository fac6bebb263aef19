"""The source manifest (seed §2, §4): the only way a source ID comes to exist.

A path is captured only under a granted root, through directories that are real directories
(no symlinked component: ``FileSystem.is_dir`` is false for a symlink), by one stable read of a
regular non-symlink file (``FileSystem.read_stable``: pinned descriptor, identity before and
after), as UTF-8 text without NUL bytes, never a private store (``.env``, ``.ssh``, ``.pi``,
``.git``, credentials, keys). The bytes are stored once under their SHA-256, read-only, and the
issued ID is opaque (random, not derived from the path or hash) and bound to the hash, size,
line count, media type and provenance. A parent's excerpt gets provenance ``parent_excerpt``,
never mistaken for a host observation. Paths are POSIX (Windows is not supported here yet).
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Callable
from typing import Any

from application.ports import DelegationStore, FileSystem, StableReadError
from domain.delegation.envelope import SourceDescriptor
from domain.delegation.errors import DelegationError
from domain.delegation.policy import Grant
from domain.delegation.receipts import (
    MAX_OBSERVATIONS,
    PARENT_OBSERVATION,
    EvidenceReceipt,
    text_sha256,
)
from domain.delegation.request import CaptureRequest, Observation
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


def _refused(index: int, why: str) -> DelegationError:
    return DelegationError(ErrorCode.DELEGATE_SOURCE_REFUSED, f"$.paths[{index}]: {why}")


def _private(parts: list[str]) -> bool:
    return any(
        part in PRIVATE_NAMES or part.startswith(".env.") or part.endswith(PRIVATE_SUFFIXES)
        for part in parts
    )


def resolve_under_root(
    fs: FileSystem, grant: Grant, cwd: str, path: str, index: int
) -> tuple[str, str, str]:
    """(absolute path, root, root-relative path) of a path the grant allows capturing."""
    absolute = posixpath.normpath(posixpath.join(cwd, path))
    for root in grant.source_roots:
        base = posixpath.normpath(root)
        if absolute.startswith(base.rstrip("/") + "/"):
            relative = absolute[len(base.rstrip("/")) + 1 :]
            parts = relative.split("/")
            if _private(parts):
                raise _refused(index, "private stores and credentials are never captured")
            walked = base
            for part in parts[:-1]:
                walked = f"{walked.rstrip('/')}/{part}"
                if not fs.is_dir(walked):
                    raise _refused(index, f"{relative}: a component is not a real directory")
            return absolute, base, relative
    raise _refused(index, "not under a granted source root (the human grants roots)")


def capture_sources(
    state: SessionState,
    request: CaptureRequest,
    *,
    grant: Grant,
    fs: FileSystem,
    store: DelegationStore,
    cwd: str,
    now_ms: int,
    new_id: Callable[[str], str],
) -> dict[str, Any]:
    issued: list[dict[str, Any]] = []
    captured: list[tuple[bytes, str, str, str | None, str | None]] = []
    for index, path in enumerate(request.paths):
        absolute, root, relative = resolve_under_root(fs, grant, cwd, path, index)
        try:
            data = fs.read_stable(absolute, max_bytes=grant.max_source_bytes).data
        except StableReadError as error:
            raise _refused(index, f"{relative}: {error.failure.value}") from None
        if b"\0" in data:
            raise _refused(index, f"{relative}: binary content is not captured")
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise _refused(index, f"{relative}: not UTF-8 text") from None
        captured.append((data, "captured", relative, absolute, root))
    for excerpt in request.excerpts:
        captured.append((excerpt.text.encode("utf-8"), "parent_excerpt", excerpt.label, None, None))
    if len(state.sources) + len(captured) > grant.max_sources:
        raise DelegationError(
            ErrorCode.DELEGATE_CAPACITY_EXHAUSTED,
            f"the session may hold {grant.max_sources} sources; it has {len(state.sources)}",
        )
    for data, provenance, location, origin, base in captured:
        sha256 = hashlib.sha256(data).hexdigest()
        existing = next(
            (
                r
                for r in state.sources.values()
                if r.descriptor.sha256 == sha256
                and r.origin == origin
                and r.descriptor.location == location
            ),
            None,
        )
        if existing is None:
            store.put_source(state.session, sha256, data)
            descriptor = SourceDescriptor(
                new_id("src"),
                sha256,
                len(data),
                line_count(data),
                MEDIA_TYPE,
                provenance,
                location,
            )
            existing = SourceRecord(descriptor, origin, base, now_ms)
            state.sources[descriptor.source_id] = existing
        issued.append(existing.descriptor.document())
    receipts = issue_observations(state, request.parent_observations, now_ms=now_ms, new_id=new_id)
    return {"op": "capture", "sources": issued, "receipts": receipts}


def issue_observations(
    state: SessionState,
    observations: tuple[Observation, ...],
    *,
    now_ms: int,
    new_id: Callable[[str], str],
) -> list[dict[str, Any]]:
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
            state.receipts[existing.receipt_id] = existing
            held.append(existing)
        issued.append(existing.document())
    return issued


def changed_sources(fs: FileSystem, state: SessionState) -> Callable[[str], bool]:
    """Whether a captured source's origin no longer holds its captured bytes (memoised for one
    transaction); a parent excerpt never changes."""
    seen: dict[str, bool] = {}

    def changed(source_id: str) -> bool:
        if source_id not in seen:
            record = state.sources.get(source_id)
            if record is None or record.origin is None:
                seen[source_id] = False
            else:
                try:
                    digest = fs.digest_stable(record.origin).sha256
                except (StableReadError, OSError):
                    digest = None
                seen[source_id] = digest != record.descriptor.sha256
        return seen[source_id]

    return changed
