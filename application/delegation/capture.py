"""Capturing sources (seed §2, §4): the only way a source ID comes to exist.

A path is captured only under a granted root, through directories that are real directories
(no symlinked component: ``FileSystem.is_dir`` is false for a symlink), by one stable read of a
regular non-symlink file (``FileSystem.read_stable``: pinned descriptor, identity before and
after), as UTF-8 text without NUL bytes, never a private store (``.env``, ``.ssh``, ``.pi``,
``.git``, credentials, keys). The bytes are stored once under their SHA-256, read-only, before
the state that names them; which IDs are issued is decided in ``domain/delegation/sources.py``.
Paths are POSIX (Windows is not supported here yet).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping

from application.ports import DelegationStore, FileSystem, StableReadError
from domain.delegation.decision import Decision
from domain.delegation.errors import DelegationError
from domain.delegation.policy import Grant
from domain.delegation.request import CaptureRequest
from domain.delegation.session import SessionState, SourceRecord
from domain.delegation.sources import Captured, Issued, issue_sources, private, text_problem
from domain.errors import ErrorCode


def _refused(index: int, why: str) -> DelegationError:
    return DelegationError(ErrorCode.DELEGATE_SOURCE_REFUSED, f"$.paths[{index}]: {why}")


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
            if private(parts):
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
) -> Decision[Issued]:
    """The request's files read and its excerpts taken, their IDs issued, and every new
    snapshot stored (inside the transaction, before its state is written)."""
    captured: list[Captured] = []
    for index, path in enumerate(request.paths):
        absolute, root, relative = resolve_under_root(fs, grant, cwd, path, index)
        try:
            data = fs.read_stable(absolute, max_bytes=grant.max_source_bytes).data
        except StableReadError as error:
            raise _refused(index, f"{relative}: {error.failure.value}") from None
        problem = text_problem(data)
        if problem is not None:
            raise _refused(index, f"{relative}: {problem}")
        captured.append(Captured(data, "captured", relative, absolute, root))
    for excerpt in request.excerpts:
        captured.append(Captured(excerpt.text.encode("utf-8"), "parent_excerpt", excerpt.label))
    decision = issue_sources(
        state,
        captured,
        request.parent_observations,
        grant=grant,
        now_ms=now_ms,
        new_id=new_id,
    )
    for sha256, data in decision.answer.snapshots:
        store.put_source(state.session, sha256, data)
    return decision


def changed_sources(fs: FileSystem, sources: Mapping[str, SourceRecord]) -> Callable[[str], bool]:
    """Whether a captured source's origin no longer holds its captured bytes (memoised for one
    transaction); a parent excerpt never changes."""
    seen: dict[str, bool] = {}

    def changed(source_id: str) -> bool:
        if source_id not in seen:
            record = sources.get(source_id)
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
