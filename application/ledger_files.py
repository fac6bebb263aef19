"""One task's read-ledger directory as a child may have left it (contract §9): where its records
and lock live, and how they are read, locked and set aside without trusting what is there.

Every path here is one a child can change (its ledger directory is writable to it, and the
kernel isolation governs writes, not modes). So records are read by the stable read (no link
followed, no FIFO waited on, the type checked on the descriptor); a lock path that is not a
regular file is set aside before the lock is taken; and an entry a child ``chmod``-ed is given
back its owner's access before a read is given up. What the records mean is
``application.spec_reads``'s.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import attrs

from application.ports import (
    Clock,
    FileSystem,
    Ids,
    LockFactory,
    LockRefused,
    ReadFailure,
    StableRead,
    StableReadError,
)
from domain import paths
from domain.attestation import ProgressCorrupt
from domain.attestation.timestamps import format_rfc3339_millis

STATE_FILE = "spec-read-state.json"
ATTESTATION_FILE = "spec-read-attestation.json"
LOCK_FILE = ".spec-read.lock"
_MAX_RECORD_BYTES = 16 * 1024 * 1024
# What the parent needs of a ledger entry it owns, given back if a child took it away.
_DIR_ACCESS = 0o700
_FILE_ACCESS = 0o600


@attrs.frozen
class TaskReadPaths:
    task_dir: str
    state: str
    attestation: str
    lock: str

    @classmethod
    def of(cls, fs: FileSystem, squad_dir: str, task_id: str) -> TaskReadPaths:
        task_dir = paths.join_path(squad_dir, task_id, flavour=fs.flavour)
        return cls(
            task_dir=task_dir,
            state=paths.join_path(task_dir, STATE_FILE, flavour=fs.flavour),
            attestation=paths.join_path(task_dir, ATTESTATION_FILE, flavour=fs.flavour),
            lock=paths.join_path(task_dir, LOCK_FILE, flavour=fs.flavour),
        )


@attrs.frozen
class LedgerFiles:
    """The records and lock at ``paths``."""

    _fs: FileSystem
    _locks: LockFactory
    _clock: Clock
    _ids: Ids
    paths: TaskReadPaths

    def read_bytes(self, path: str) -> bytes | None:
        read = self.read(path)
        return None if read is None else read.data

    def read(self, path: str) -> StableRead | None:
        """The record at ``path``; ``None`` when nothing is there. ``ProgressCorrupt`` when
        something is there that cannot be read as a record."""
        try:
            return self._fs.read_stable(path, max_bytes=_MAX_RECORD_BYTES)
        except StableReadError as exc:
            failure = exc
        if failure.failure is ReadFailure.UNREADABLE and self._reclaim(path):
            try:
                return self._fs.read_stable(path, max_bytes=_MAX_RECORD_BYTES)
            except StableReadError as exc:
                failure = exc
        if not self._present(path):
            return None
        raise ProgressCorrupt(f"{path} cannot be read: {failure.failure.value}") from None

    @contextlib.contextmanager
    def locked(self) -> Iterator[str | None]:
        """The task's lock, held for the block. Yields ``None``, or what was set aside first:
        a child can leave anything at the lock path (a FIFO that would block ``open(2)`` for
        ever, a link the parent would follow out of every grant), which the lock refuses and
        is moved aside, as a corrupt record is, before a fresh one is taken. A second refusal
        (something planted again meanwhile) propagates as ``LockRefused``."""
        self._reclaim(self.paths.lock)
        with contextlib.ExitStack() as held:
            yield self._take_lock(held)

    def move_aside(self, path: str, why: str) -> str | None:
        """Rename whatever is at ``path`` (a rename never follows a link nor opens a FIFO) to a
        new name for audit; that name, or ``None`` when nothing was there."""
        if not self._present(path):
            return None
        stamp = format_rfc3339_millis(self._clock.now()).replace(":", "")
        target = f"{path}.{why}-{stamp}-{self._ids.uuid4_hex()[:8]}"
        self._fs.rename_no_replace(path, target)
        return target

    def _take_lock(self, held: contextlib.ExitStack) -> str | None:
        try:
            held.enter_context(self._locks.lock(self.paths.lock))
            return None
        except LockRefused as refused:
            why = refused.strerror or "not a regular file"
        aside = self.move_aside(self.paths.lock, "unsafe")
        held.enter_context(self._locks.lock(self.paths.lock))
        shown = "" if aside is None else f"; set aside as {aside[len(self.paths.task_dir) + 1 :]}"
        return f"its read lock {LOCK_FILE} was refused ({why}){shown}"

    def _present(self, path: str) -> bool:
        try:
            return self._fs.exists(path)
        except OSError:
            return True  # there, as far as anyone can tell, but not reachable

    def _reclaim(self, *files: str) -> bool:
        """Give the ledger directory and ``files`` back the access this process needs of them
        (a child's ``chmod`` took it away); whether any mode changed."""
        changed = self._fs.reclaim_access(self.paths.task_dir, _DIR_ACCESS)
        for path in files:
            changed = self._fs.reclaim_access(path, _FILE_ACCESS) or changed
        return changed
