"""Read-only audit of a squad: the canonical bytes and every task's attestation."""

from __future__ import annotations

import attrs

from application.attestation_check import AttestationAuditor
from application.spec_reads import AttestationStatus
from application.squads.read_words import task_word
from domain.attestation.words import NOT_REQUIRED_WORD, AttestationWord
from domain.squad.model import ReviewStatus, SquadStatus, TaskStatus


@attrs.frozen
class TaskAudit:
    task_id: str
    status: TaskStatus
    attestation: AttestationStatus
    missing_indices: tuple[int, ...] | None
    reason: str | None
    word: AttestationWord = NOT_REQUIRED_WORD
    """What is true of the task's read, in the words every face shows."""


@attrs.frozen
class SquadAudit:
    squad_id: str
    canonical_ok: bool
    canonical_reason: str | None
    tasks: tuple[TaskAudit, ...]
    isolation: str | None = None
    # The layers that held for every child: the weakest level any child ran under.
    isolation_layers: str | None = None
    squad_status: SquadStatus | None = None
    """The squad's own outcome, which the audit does not judge."""
    review_status: ReviewStatus | None = None

    @property
    def done_count(self) -> int:
        return sum(1 for t in self.tasks if t.status is TaskStatus.DONE)

    def outcome_text(self) -> str:
        """``status failed · review none · 0 of 4 tasks done``: the squad's outcome, apart
        from the audit."""
        review = "none" if self.review_status is None else str(self.review_status)
        return (
            f"status {self.squad_status} · review {review} · {self.done_count} of "
            f"{len(self.tasks)} tasks done"
        )

    @property
    def passed(self) -> bool:
        """The canonical file verifies and every non-cancelled done task is attested."""
        return self.canonical_ok and all(
            t.attestation in {AttestationStatus.VALID, AttestationStatus.NOT_REQUIRED}
            for t in self.tasks
            if t.status is TaskStatus.DONE
        )


def audit_squad(auditor: AttestationAuditor, squad_id: str) -> SquadAudit:
    snapshot = auditor.store.snapshot(squad_id)
    squad = snapshot.squad
    canonical, problem = auditor.verified_canonical(squad)
    audits: list[TaskAudit] = []
    for task_id in sorted(snapshot.tasks):
        task = snapshot.tasks[task_id]
        check = auditor.validate_task_attestation(squad, task, canonical)
        # With a failing canonical spec no task's read can be judged: the word says so.
        judged = check if problem is None else None
        audits.append(
            TaskAudit(
                task_id=task_id,
                status=task.status,
                attestation=check.status,
                missing_indices=check.missing_indices,
                reason=check.reason,
                word=task_word(squad, task, judged, canonical_problem=problem),
            )
        )
    return SquadAudit(
        squad_id=squad.id,
        canonical_ok=problem is None,
        canonical_reason=problem,
        tasks=tuple(audits),
        isolation=squad.isolation,
        isolation_layers=squad.isolation_layers,
        squad_status=squad.status,
        review_status=None if squad.review is None else squad.review.status,
    )
