"""``validate_task_attestation``: the one check every completion path uses (contract §10).

Settlement, ``complete_task``, entry to review, ``squad_review`` and restart reconciliation all
call it; none has its own variant. It verifies the canonical bytes first, then the task's
attestation against them. It only reads.
"""

from __future__ import annotations

import attrs

from application.canonical import CanonicalIntegrityError, CanonicalReader
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
            CanonicalReader(self.fs, squad.spec).read()
        except CanonicalIntegrityError as exc:
            return exc.reason
        return None

    def ledger(self, squad: Squad, task_id: str) -> TaskReadLedger:
        assert squad.spec is not None
        return TaskReadLedger(
            fs=self.fs,
            locks=self.locks,
            clock=self.clock,
            canonical=CanonicalReader(self.fs, squad.spec),
            squad_id=squad.id,
            task_id=task_id,
            squad_dir=self.store.squad_dir(squad.id),
        )

    def validate_task_attestation(self, squad: Squad, task: Task) -> AttestationCheck:
        if squad.spec is None or task.status is TaskStatus.CANCELLED:
            return NOT_REQUIRED
        return self.ledger(squad, task.id).audit()
