"""One task's durable read coverage and attestation (contract §9), on the task-owned paths.

Every change happens under the task's cross-process lock with atomic temp-write, fsync and
rename. The ledger is used by the child (commits) and by the parent (audits); both verify the
canonical bytes first, so neither trusts coverage of a spec that is not the squad's. Every path
here is one a child can change: how its records are read, locked and set aside is
``application.ledger_files``'s.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Sequence
from datetime import datetime

import attrs

from application.canonical import CanonicalIntegrityError, CanonicalReader, CanonicalSpec
from application.ledger_files import LedgerFiles, TaskReadPaths
from application.ports import Clock, FileIdentity, FileSystem, Ids, LockFactory
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
from domain.attestation.verdict import AttestationStatus as AttestationStatus  # noqa: PLC0414 (re-exported)
from domain.chunks import ChunkTable


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
    _files: LedgerFiles = attrs.field(init=False, eq=False, repr=False)
    # Used only under the task lock (``_load_coverage`` and the writers), so one process's
    # threads never race on it; other processes are seen through the file's identity.
    _memo: _CoverageMemo = attrs.field(init=False, factory=_CoverageMemo, eq=False, repr=False)

    @paths.default
    def _task_paths(self) -> TaskReadPaths:
        return TaskReadPaths.of(self._fs, self._squad_dir, self.task_id)

    @_files.default
    def _ledger_files(self) -> LedgerFiles:
        return LedgerFiles(self._fs, self._locks, self._clock, self._ids, self.paths)

    @contextlib.contextmanager
    def locked(self) -> Iterator[str | None]:
        """The task's lock, held for the block; what had to be set aside to take it, if
        anything (``LedgerFiles.locked``)."""
        with self._files.locked() as note:
            yield note

    def binding(self, canonical: CanonicalSpec) -> SpecBinding:
        return SpecBinding.of(canonical.table, squad_id=self.squad_id, task_id=self.task_id)

    # -- reading --------------------------------------------------------------------------------

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
            read = self._files.read(self.paths.state)
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
            data = self._files.read_bytes(self.paths.attestation)
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
            data = self._files.read_bytes(self.paths.state)
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
        if path == self.paths.state:
            self._memo.clear()
        return self._files.move_aside(path, why)
