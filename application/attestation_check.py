"""``validate_task_attestation``: the one check every completion path uses (contract §10).

Settlement, ``complete_task``, entry to review, ``squad_review`` and restart reconciliation all
call it; none has its own variant. It verifies the canonical bytes first, then the task's
attestation against them. It only reads.
"""

from __future__ import annotations

import attrs

from application.canonical import CanonicalIntegrityError, CanonicalReader, CanonicalSpec
from application.ports import Clock, FileSystem, LockFactory, Store
from application.spec_reads import AttestationCheck, AttestationStatus, TaskReadLedger
from domain.squad.model import Squad, Task, TaskStatus

NOT_REQUIRED = AttestationCheck(AttestationStatus.NOT_REQUIRED)


@attrs.frozen
class AttestationAuditor:
    fs: FileSystem
    locks: LockFactory
    clock: Clock
    store: Store

    def canonical_problem(self, squad: Squad) -> str | None:
        """Why the squad's canonical spec fails verification, or ``None`` (also for legacy)."""
        if squad.spec is None:
            return None
        try:
            self.canonical_reader(squad).read()
        except CanonicalIntegrityError as exc:
            return exc.reason
        return None

    def ledger(self, squad: Squad, task_id: str) -> TaskReadLedger:
        assert squad.spec is not None
        return TaskReadLedger(
            fs=self.fs,
            locks=self.locks,
            clock=self.clock,
            canonical=self.canonical_reader(squad),
            squad_id=squad.id,
            task_id=task_id,
            squad_dir=self.store.squad_dir(squad.id),
        )

    def validate_task_attestation(
        self, squad: Squad, task: Task, canonical: CanonicalSpec | None = None
    ) -> AttestationCheck:
        """Canonical bytes, then the task's attestation. ``canonical`` lets one verified read
        of this operation serve several tasks; by default the file is read and verified here."""
        if squad.spec is None or task.status is TaskStatus.CANCELLED:
            return NOT_REQUIRED
        return self.ledger(squad, task.id).audit(canonical)

    def canonical_or_problem(self, squad: Squad) -> tuple[CanonicalSpec | None, str | None]:
        """For read-only views: the verified canonical read, or why it failed (legacy: both
        ``None``)."""
        if squad.spec is None:
            return None, None
        try:
            return self.read_canonical(squad), None
        except CanonicalIntegrityError as exc:
            return None, exc.reason

    def read_canonical(self, squad: Squad) -> CanonicalSpec:
        """One verified read of the squad's canonical spec (``CanonicalIntegrityError``)."""
        assert squad.spec is not None
        return self.canonical_reader(squad).read()

    def canonical_reader(self, squad: Squad) -> CanonicalReader:
        """The squad's canonical file, held to ``<squad-dir>/spec/spec.v1.json`` (no symlinks)
        before every read, as the child holds its environment."""
        assert squad.spec is not None
        return CanonicalReader(self.fs, squad.spec, squad_dir=self.store.squad_dir(squad.id))
