"""One task's durable read coverage and attestation (contract §9), on the task-owned paths.

Every change happens under the task's cross-process lock with atomic temp-write, fsync and
rename. The ledger is used by the child (commits) and by the parent (audits); both verify the
canonical bytes first, so neither trusts coverage of a spec that is not the squad's.

Every path here is one a child can change (its ledger directory is writable to it, and the
kernel isolation governs writes, not modes). So nothing is trusted to be what it should be:
records are read by the stable read (no link followed, no FIFO waited on, the type checked on
the descriptor); a lock path that is not a regular file is set aside before the lock is taken;
and an entry a child ``chmod``-ed is given back its owner's access before a read is given up.
"""

from __future__ import annotations

import contextlib
import enum
import functools
from collections.abc import Iterator, Sequence
from datetime import datetime

import attrs

from application.canonical import CanonicalIntegrityError, CanonicalReader, CanonicalSpec
from application.ports import (
    Clock,
    FileIdentity,
    FileSystem,
    Ids,
    LockFactory,
    LockRefused,
    ReadFailure,
    StableRead,
    StableReadError,
)
from domain import paths
from domain.attestation import (
    Attestation,
    AttestationValid,
    AttestationVerdict,
    ChunkDelivery,
    Coverage,
    CoverageState,
    ProgressCorrupt,
    SpecBinding,
    parse_progress,
    serialise_progress,
    validate_attestation_bytes,
)
from domain.attestation.timestamps import format_rfc3339_millis
from domain.chunks import ChunkTable

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


class AttestationStatus(enum.StrEnum):
    VALID = "valid"
    MISSING = "missing"
    INVALID = "invalid"
    NOT_REQUIRED = "not_required"


@attrs.frozen
class AttestationCheck:
    status: AttestationStatus
    reason: str | None = None
    missing_indices: tuple[int, ...] | None = None
    attestation: Attestation | None = None
    # A well-formed attestation the parent did not observe being earned (grounding failed).
    ungrounded: bool = False

    @property
    def valid(self) -> bool:
        return self.status in {AttestationStatus.VALID, AttestationStatus.NOT_REQUIRED}


@functools.lru_cache(maxsize=256)
def _cached_verdict(data: bytes, binding: SpecBinding, table: ChunkTable) -> AttestationVerdict:
    # Pure in its arguments (the bytes read just now, the verified table): safe to memoise, and
    # reconcile passes re-judge the same unchanged files over and over.
    return validate_attestation_bytes(data, binding, table)


@attrs.define(eq=False)
class _CoverageMemo:
    """The coverage last read from or written to the progress file, with that file's identity
    then and the binding (hence the verified spec digest) it was judged against."""

    entry: tuple[FileIdentity, SpecBinding, Coverage] | None = None

    def get(self, identity: FileIdentity | None, binding: SpecBinding) -> Coverage | None:
        entry = self.entry
        if entry is None or identity is None or entry[0] != identity or entry[1] != binding:
            return None
        return entry[2]

    def put(self, identity: FileIdentity | None, binding: SpecBinding, coverage: Coverage) -> None:
        self.entry = None if identity is None else (identity, binding, coverage)

    def clear(self) -> None:
        self.entry = None


@attrs.frozen(kw_only=True)
class TaskReadLedger:
    """Durable coverage of one task of one file squad."""

    _fs: FileSystem
    _locks: LockFactory
    _clock: Clock
    _ids: Ids
    _canonical: CanonicalReader
    squad_id: str
    task_id: str
    _squad_dir: str
    paths: TaskReadPaths = attrs.field(init=False)
    # Used only under the task lock (``_load_coverage`` and the writers), so one process's
    # threads never race on it; other processes are seen through the file's identity.
    _memo: _CoverageMemo = attrs.field(init=False, factory=_CoverageMemo, eq=False, repr=False)

    @paths.default
    def _task_paths(self) -> TaskReadPaths:
        return TaskReadPaths.of(self._fs, self._squad_dir, self.task_id)

    def binding(self, canonical: CanonicalSpec) -> SpecBinding:
        return SpecBinding.of(canonical.table, squad_id=self.squad_id, task_id=self.task_id)

    # -- reading --------------------------------------------------------------------------------

    def _read_file(self, path: str) -> bytes | None:
        read = self._read_record(path)
        return None if read is None else read.data

    def _read_record(self, path: str) -> StableRead | None:
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

    @contextlib.contextmanager
    def locked(self) -> Iterator[str | None]:
        """The task's lock, held for the block. Yields ``None``, or what was set aside first:
        a child can leave anything at the lock path (a FIFO that would block ``open(2)`` for
        ever, a link the parent would follow out of every grant), which the lock refuses and
        the ledger moves aside, as it moves aside a corrupt record, before taking a fresh one.
        A second refusal (something planted again meanwhile) propagates as ``LockRefused``."""
        self._reclaim(self.paths.lock)
        with contextlib.ExitStack() as held:
            yield self._take_lock(held)

    def _take_lock(self, held: contextlib.ExitStack) -> str | None:
        try:
            held.enter_context(self._locks.lock(self.paths.lock))
            return None
        except LockRefused as refused:
            why = refused.strerror or "not a regular file"
        aside = self._move_aside(self.paths.lock, "unsafe")
        held.enter_context(self._locks.lock(self.paths.lock))
        shown = "" if aside is None else f"; set aside as {aside[len(self.paths.task_dir) + 1 :]}"
        return f"its read lock {LOCK_FILE} was refused ({why}){shown}"

    def _load_coverage(self, canonical: CanonicalSpec) -> Coverage:
        """Progress as recorded; a corrupt file is moved aside and coverage restarts.

        Call under the task lock. While the progress file keeps the identity it had when this
        ledger last read or wrote it, and the verified spec binds the same way, the coverage
        judged then is reused instead of re-parsing every delivery (O(k) per commit). Every
        writer replaces the file (a new inode), and any other change moves its size, mtime or
        ctime, so a foreign rewrite shows as a new identity and is read and judged afresh.
        """
        remembered = self._remembered_coverage(canonical)
        if remembered is not None:
            return remembered
        binding = self.binding(canonical)
        self._memo.clear()
        try:
            read = self._read_record(self.paths.state)
            if read is None:
                return Coverage.required(binding)
            coverage = parse_progress(read.data, binding, canonical.table)
        except ProgressCorrupt:
            # The canonical file verified (``canonical`` exists), so restarting is safe.
            self._move_aside(self.paths.state, "corrupt")
            return Coverage.required(binding)
        # The identity of the bytes just parsed (the read's own pinned fstat).
        self._memo.put(read.identity, binding, coverage)
        return coverage

    def _remembered_coverage(self, canonical: CanonicalSpec) -> Coverage | None:
        """The memo's coverage while the progress file still has the identity it had then;
        call under the task lock."""
        return self._memo.get(self._fs.identity(self.paths.state), self.binding(canonical))

    def _write_progress(self, coverage: Coverage) -> None:
        self._fs.write_atomic(self.paths.state, serialise_progress(coverage))
        # What was just written is what the file now holds; its identity is taken after the
        # rename. A rewrite slipped in between would be remembered as ours and overwritten by
        # the next commit, never believed: the memo only ever holds coverage this ledger judged.
        self._memo.put(self._fs.identity(self.paths.state), coverage.binding, coverage)

    def attestation_verdict(self, canonical: CanonicalSpec) -> AttestationCheck:
        """The attestation file judged against a verified canonical read."""
        try:
            data = self._read_file(self.paths.attestation)
        except ProgressCorrupt as exc:
            return AttestationCheck(AttestationStatus.INVALID, reason=str(exc))
        if data is None:
            return AttestationCheck(AttestationStatus.MISSING, reason="attestation file missing")
        verdict = _cached_verdict(data, self.binding(canonical), canonical.table)
        if isinstance(verdict, AttestationValid):
            return AttestationCheck(AttestationStatus.VALID, attestation=verdict.attestation)
        return AttestationCheck(AttestationStatus.INVALID, reason=verdict.reason)

    def audit(self, canonical: CanonicalSpec | None = None) -> AttestationCheck:
        """Read-only verdict for the parent: canonical bytes, then the attestation.

        ``canonical``: a read the caller verified during this same operation (one read serves
        every task of a pass); without it the canonical file is read and verified here.
        """
        if canonical is None:
            try:
                canonical = self._canonical.read()
            except CanonicalIntegrityError as exc:
                return AttestationCheck(AttestationStatus.INVALID, reason=exc.reason)
        check = self.attestation_verdict(canonical)
        if check.status is AttestationStatus.VALID:
            return check
        return attrs.evolve(check, missing_indices=self._missing_read_only(canonical))

    def _missing_read_only(self, canonical: CanonicalSpec) -> tuple[int, ...] | None:
        binding = self.binding(canonical)
        try:
            data = self._read_file(self.paths.state)
            coverage = (
                Coverage.required(binding)
                if data is None
                else parse_progress(data, binding, canonical.table)
            )
        except ProgressCorrupt:
            return None
        if coverage.state is CoverageState.INVALID:
            return None
        return coverage.missing_indices()

    # -- changing -------------------------------------------------------------------------------

    def recover(self) -> Coverage:
        """Session start: trust a valid attestation, finalise complete progress, restart after
        a tampered attestation, and keep everything else as recorded."""
        canonical = self._canonical.read()
        with self.locked():
            # Every writer of these records holds this lock: a temp file beside them now was
            # left by a writer that died before its rename (never published, never read).
            self._fs.remove_temporaries(self.paths.state)
            self._fs.remove_temporaries(self.paths.attestation)
            coverage = self._load_coverage(canonical)
            if coverage.state is CoverageState.INVALID:
                return coverage  # a conflicting record blocks the task; nothing reopens it here
            check = self.attestation_verdict(canonical)
            if check.status is AttestationStatus.VALID and check.attestation is not None:
                if coverage.state is CoverageState.COMPLETE:
                    return coverage
                # Progress went missing or corrupt behind a valid attestation: the attestation
                # is the proof, so progress is restored from it rather than reread.
                restored = Coverage(
                    binding=check.attestation.binding,
                    state=CoverageState.COMPLETE,
                    deliveries=check.attestation.chunks,
                )
                self._write_progress(restored)
                return restored
            if check.status is AttestationStatus.INVALID:
                # A derived record that no longer verifies proves nothing; neither does the
                # progress it was made from. Keep both for audit and read everything again.
                self._move_aside(self.paths.attestation, "invalid")
                self._move_aside(self.paths.state, "superseded")
                return Coverage.required(self.binding(canonical))
            if coverage.state is CoverageState.COMPLETE:
                self._write_attestation(coverage)
            return coverage

    def set_aside_ungrounded(self) -> str | None:
        """The parent's answer to an attestation it never saw earned (copied in, written by
        hand, committed by an impersonating bridge): both ledger files are kept for audit
        under new names, so the task's next child reads every chunk again instead of trusting
        them. What had to be set aside to take the task lock, if anything (``locked``)."""
        with self.locked() as note:
            self._move_aside(self.paths.attestation, "ungrounded")
            self._move_aside(self.paths.state, "superseded")
        return note

    def commit(
        self, deliveries: Sequence[tuple[int, str, datetime]], canonical: CanonicalSpec
    ) -> Coverage:
        """Record verified deliveries (chunk index, tool call ID, when the delivery was
        observed), in order, with one durable write; write the attestation on completion.
        ``canonical``: the fresh canonical read the deliveries were verified against."""
        records = [
            ChunkDelivery.of(canonical.table.chunk(index), tool_call_id=call_id, delivered_at=at)
            for index, call_id, at in deliveries
        ]
        with self.locked():
            coverage = self._load_coverage(canonical)
            updated = coverage
            for record in records:
                updated = updated.commit(record, canonical.table)
            if updated != coverage:
                self._write_progress(updated)
            if updated.state is CoverageState.COMPLETE:
                check = self.attestation_verdict(canonical)
                if check.status is AttestationStatus.MISSING:
                    self._write_attestation(updated)
            return updated

    def current(self, canonical: CanonicalSpec) -> Coverage:
        with self.locked():
            return self._load_coverage(canonical)

    def _write_attestation(self, coverage: Coverage) -> None:
        latest = max(d.delivered_at for d in coverage.deliveries)
        completed_at = max(self._clock.now(), latest)
        attestation = Attestation.of(coverage, completed_at)
        self._fs.write_atomic(self.paths.attestation, attestation.to_json_bytes())

    def _move_aside(self, path: str, why: str) -> str | None:
        """Rename whatever is at ``path`` (a rename never follows a link nor opens a FIFO) to a
        new name for audit; that name, or ``None`` when nothing was there."""
        if path == self.paths.state:
            self._memo.clear()
        if not self._present(path):
            return None
        stamp = format_rfc3339_millis(self._clock.now()).replace(":", "")
        target = f"{path}.{why}-{stamp}-{self._ids.uuid4_hex()[:8]}"
        self._fs.rename_no_replace(path, target)
        return target
