"""``validate_task_attestation``: the one check every completion path uses (contract §10).

Settlement, ``complete_task``, entry to review, ``squad_review``, restart reconciliation and
``verify`` all call it; none has its own variant. It verifies the canonical bytes first, then
the task's attestation against them, then that the attestation is grounded in what the parent
itself observed of the task's children (``domain/attestation/grounding.py``). It only reads.
"""

from __future__ import annotations

import threading

import attrs

from application.canonical import CanonicalIntegrityError, CanonicalReader, CanonicalSpec
from application.ports import Clock, FileSystem, Ids, LockFactory, Store
from application.session_check import session_problem
from application.spec_reads import AttestationCheck, AttestationStatus, TaskReadLedger
from domain.attestation.grounding import grounding_problem
from domain.squad.model import Squad, Task, TaskStatus
from domain.strict_json import decode_json_object

NOT_REQUIRED = AttestationCheck(AttestationStatus.NOT_REQUIRED)


def _task_ids_of(data: bytes) -> tuple[str, ...]:
    document = decode_json_object(data)
    tasks = document.get("tasks")
    if not isinstance(tasks, list):
        return ()
    return tuple(t["id"] for t in tasks if isinstance(t, dict) and isinstance(t.get("id"), str))


# Keyed by the digest of the verified bytes (``table.spec_sha256``, which the reader checked
# against the pinned SHA-256), not by the bytes: every pass reads the spec afresh, and hashing
# a new 1 MiB ``bytes`` object as a cache key cost as much as the pass's own SHA-256.
_TASK_IDS: dict[str, tuple[str, ...]] = {}
_MAX_TASK_IDS = 16
_TASK_IDS_GUARD = threading.Lock()


def spec_task_ids(canonical: CanonicalSpec) -> tuple[str, ...]:
    """The task ids of a verified canonical spec (validated at publication; decoded once per
    content in this process)."""
    key = canonical.table.spec_sha256
    ids = _TASK_IDS.get(key)
    if ids is None:
        ids = _task_ids_of(canonical.data)
        with _TASK_IDS_GUARD:
            if len(_TASK_IDS) >= _MAX_TASK_IDS:
                _TASK_IDS.pop(next(iter(_TASK_IDS)))
            _TASK_IDS[key] = ids
    return ids


@attrs.frozen
class AttestationAuditor:
    fs: FileSystem
    locks: LockFactory
    clock: Clock
    ids: Ids
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

    def integrity_problem(self, squad: Squad) -> str | None:
        """:meth:`canonical_problem`, then the pinned task set against the canonical spec:
        every task of the spec stays pinned for the life of the squad. An attested flow's
        canonical copy is its brief, no squad spec: its tasks are pinned at publication."""
        return self.verified_canonical(squad)[1]

    def verified_canonical(self, squad: Squad) -> tuple[CanonicalSpec | None, str | None]:
        """:meth:`integrity_problem`, with the canonical read it verified (``None`` when it
        failed or for a legacy squad), so that one read serves the rest of an operation."""
        if squad.spec is None:
            return None, None
        try:
            canonical = self.read_canonical(squad)
        except CanonicalIntegrityError as exc:
            return None, exc.reason
        if squad.flow_id is not None:
            return canonical, None
        pinned = frozenset(squad.task_ids)  # a set: the tuple made this quadratic in tasks
        unpinned = [t for t in spec_task_ids(canonical) if t not in pinned]
        if unpinned:
            return None, (
                f"{len(unpinned)} task(s) of the canonical spec are missing from the squad's "
                f"pinned task set (first: '{unpinned[0]}')"
            )
        return canonical, None

    def ledger(self, squad: Squad, task_id: str) -> TaskReadLedger:
        assert squad.spec is not None
        return TaskReadLedger(
            fs=self.fs,
            locks=self.locks,
            clock=self.clock,
            ids=self.ids,
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
        check = self.ledger(squad, task.id).audit(canonical)
        if check.status is not AttestationStatus.VALID or check.attestation is None:
            return check
        session_file = None if task.session is None else task.session.file
        problem = None
        if session_file is not None:
            # The deliveries count only in the task's own session, and only while it is there.
            problem = session_problem(
                self.fs, self.store.layout(squad.id), task.id, session_file, must_exist=True
            )
        if problem is None:
            problem = grounding_problem(
                check.attestation,
                self.store.observations(squad.id, task.id),
                session_file=session_file,
                now=self.clock.now(),
            )
        if problem is None:
            return check
        return AttestationCheck(
            AttestationStatus.INVALID,
            reason=f"attestation is not grounded in what the parent observed: {problem}",
            ungrounded=True,
        )

    def audit_inputs(self, squad: Squad, task: Task) -> tuple[str, ...]:
        """The files :meth:`validate_task_attestation` reads for a valid verdict besides the
        canonical spec: the task's attestation, the parent's observation record and the task's
        bound session file. Whoever remembers a verdict
        (``application/squads/scheduler/audit_memo.py``)
        witnesses exactly these."""
        inputs = (
            self.ledger(squad, task.id).paths.attestation,
            self.store.layout(squad.id).observed_file(task.id),
        )
        return inputs if task.session is None else (*inputs, task.session.file)

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
