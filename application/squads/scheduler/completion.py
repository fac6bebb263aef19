"""The end of a squad's run: every task done opens the review gate; a failure that nothing can
get past any more fails the squad."""

from __future__ import annotations

from collections.abc import Mapping

from application.attestation_check import AttestationAuditor
from application.ports import SquadSnapshot
from application.squads.scheduler.context import Notice, SchedulerContext
from application.squads.status import SquadStatusReader, review_gate_text
from domain.squad.model import Review, ReviewStatus, SquadStatus, Task, TaskStatus
from domain.squad.transitions import move_squad

REVIEW_REQUIRED = "review_required"


def check_completion(
    context: SchedulerContext, auditor: AttestationAuditor, view: SquadSnapshot | None = None
) -> None:
    """``view``: the squad as this pass last committed it, when nothing was spawned since.
    A view in which neither the review gate nor a failure is due skips the transaction: the
    decision is only ever taken under the lock, and a change another process commits after the
    view is seen by the next pass (level-triggered, at the latest on the periodic tick)."""
    if view is not None and not _may_end(view):
        return
    now = context.clock.now()
    notice: Notice | None = None
    review_opened = False
    with context.store.transaction(context.squad_id) as tx:
        squad = tx.squad
        tasks = dict(tx.tasks)
        relevant = [t for t in tasks.values() if t.status is not TaskStatus.CANCELLED]
        if squad.status is SquadStatus.RUNNING and all(
            t.status is TaskStatus.DONE for t in relevant
        ):
            # Every done task was audited this pass; only then may review begin.
            review = Review(status=ReviewStatus.PENDING, requested_at=now)
            tx.put_squad(move_squad(squad, SquadStatus.REVIEW, review=review))
            review_opened = True
        elif squad.status is SquadStatus.RUNNING and has_failed(tasks):
            tx.put_squad(move_squad(squad, SquadStatus.FAILED))
            notice = Notice("squad_failed", squad.id, f"Squad {squad.id} failed.")
    if review_opened:
        # Told from the committed records, audited again: each task's attestation as it is now.
        reader = SquadStatusReader(store=context.store, auditor=auditor, clock=context.clock)
        report = reader.status(context.squad_id)
        notice = Notice(REVIEW_REQUIRED, context.squad_id, review_gate_text(report))
    if notice is not None:
        context.notify(notice)


def _may_end(view: SquadSnapshot) -> bool:
    if view.squad.status is not SquadStatus.RUNNING:
        return False
    relevant = [t for t in view.tasks.values() if t.status is not TaskStatus.CANCELLED]
    return all(t.status is TaskStatus.DONE for t in relevant) or has_failed(view.tasks)


def has_failed(tasks: Mapping[str, Task]) -> bool:
    statuses = [t.status for t in tasks.values() if t.status is not TaskStatus.CANCELLED]
    if TaskStatus.FAILED not in statuses:
        return False
    if any(s in {TaskStatus.PENDING, TaskStatus.IN_PROGRESS} for s in statuses):
        return False
    return all(s in {TaskStatus.DONE, TaskStatus.BLOCKED, TaskStatus.FAILED} for s in statuses)
