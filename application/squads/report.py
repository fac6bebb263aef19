"""The evidence pack for a reviewer (``pi-squad report``), read-only.

One snapshot of the squad, one verified read of its canonical spec, and every task's
attestation judged against that read at report time by the same ``AttestationAuditor`` every
completion path uses. Nothing here writes: rendering and writing the report files is the
entrypoint's business.

In file mode nothing here carries spec content: no goal, no titles, no descriptions. Task
outputs are carried whole; they are the children's own words, never shortened.
"""

from __future__ import annotations

from datetime import datetime

import attrs

from application.attestation_check import NOT_REQUIRED, AttestationAuditor
from application.canonical import CanonicalSpec
from application.ports import Clock, Store
from application.spec_reads import AttestationCheck, AttestationStatus
from application.squads.read_words import task_word
from domain.attestation.words import NOT_REQUIRED_WORD, AttestationWord
from domain.squad.model import Review, Squad, Task, TaskStatus


@attrs.frozen
class AttestationSummary:
    """What a reviewer needs of one task's attestation, judged now.

    The delivery fields are filled only for a valid attestation: an invalid record proves
    nothing, so none of its claims are repeated as if they were evidence.
    """

    status: AttestationStatus
    chunk_count: int | None = None
    chunks_committed: int | None = None
    first_delivered_at: datetime | None = None
    last_delivered_at: datetime | None = None
    completed_at: datetime | None = None
    tool_call_ids: tuple[str, ...] = ()
    missing_indices: tuple[int, ...] | None = None
    reason: str | None = None

    @classmethod
    def of(cls, check: AttestationCheck, chunk_count: int | None) -> AttestationSummary:
        record = check.attestation
        if check.status is AttestationStatus.VALID and record is not None:
            delivered = [chunk.delivered_at for chunk in record.chunks]
            return cls(
                status=check.status,
                chunk_count=record.binding.chunk_count,
                chunks_committed=len(record.chunks),
                first_delivered_at=min(delivered),
                last_delivered_at=max(delivered),
                completed_at=record.completed_at,
                tool_call_ids=tuple(chunk.tool_call_id for chunk in record.chunks),
            )
        committed = None
        if chunk_count is not None and check.missing_indices is not None:
            committed = chunk_count - len(check.missing_indices)
        return cls(
            status=check.status,
            chunk_count=chunk_count,
            chunks_committed=committed,
            missing_indices=check.missing_indices,
            reason=check.reason,
        )


@attrs.frozen
class TaskEvidence:
    task: Task
    attestation: AttestationSummary
    required: bool
    word: AttestationWord = NOT_REQUIRED_WORD
    """What is true of the task's read, in the words every face shows."""

    @property
    def verified(self) -> bool:
        return not self.required or self.attestation.status is AttestationStatus.VALID


@attrs.frozen
class SquadReport:
    squad: Squad
    generated_at: datetime
    canonical_problem: str | None
    tasks: tuple[TaskEvidence, ...]
    reviews: tuple[Review, ...]
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """The canonical spec verifies and every required attestation verifies now."""
        return not self.problems

    @property
    def required_count(self) -> int:
        return sum(1 for t in self.tasks if t.required)


class ReportBuilder:
    """Builds a :class:`SquadReport`; reads the store and the task ledgers only."""

    def __init__(self, *, store: Store, auditor: AttestationAuditor, clock: Clock) -> None:
        self._store = store
        self._auditor = auditor
        self._clock = clock

    def build(self, squad_id: str) -> SquadReport:
        snapshot = self._store.snapshot(squad_id)
        squad, tasks = snapshot.squad, snapshot.tasks
        canonical, problem = self._auditor.canonical_or_problem(squad)
        evidence = tuple(
            self._evidence(squad, tasks[task_id], canonical, problem) for task_id in sorted(tasks)
        )
        problems: list[str] = []
        if problem is not None:
            problems.append(f"canonical spec fails verification: {problem}")
        problems.extend(_task_problem(item) for item in evidence if not item.verified)
        reviews = squad.review_history + ((squad.review,) if squad.review is not None else ())
        return SquadReport(
            squad=squad,
            generated_at=self._clock.now(),
            canonical_problem=problem,
            tasks=evidence,
            reviews=reviews,
            problems=tuple(problems),
        )

    def _evidence(
        self,
        squad: Squad,
        task: Task,
        canonical: CanonicalSpec | None,
        canonical_problem: str | None,
    ) -> TaskEvidence:
        # Contract §1.4: every non-cancelled task of a file squad needs its own attestation.
        required = squad.spec is not None and task.status is not TaskStatus.CANCELLED
        chunk_count = squad.spec.chunk_count if squad.spec is not None else None
        if not required:
            return TaskEvidence(task, AttestationSummary.of(NOT_REQUIRED, None), required=False)
        if canonical is None:
            check = AttestationCheck(
                AttestationStatus.INVALID,
                reason=f"the canonical spec fails verification: {canonical_problem}",
            )
            word = task_word(squad, task, None, canonical_problem=canonical_problem)
        else:
            check = self._auditor.validate_task_attestation(squad, task, canonical)
            word = task_word(squad, task, check, canonical_problem=None)
        return TaskEvidence(
            task, AttestationSummary.of(check, chunk_count), required=True, word=word
        )


def _task_problem(item: TaskEvidence) -> str:
    return f"task '{item.task.id}' ({item.task.status}): attestation {item.word.text}"
