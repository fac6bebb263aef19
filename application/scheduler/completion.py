"""The end of a squad's run: every task done opens the review gate; a failure that nothing can
get past any more fails the squad."""

from __future__ import annotations

from collections.abc import Mapping

from application.scheduler.context import Notice, SchedulerContext
from domain.squad.model import Review, ReviewStatus, Squad, SquadStatus, Task, TaskStatus
from domain.squad.transitions import move_squad


def check_completion(context: SchedulerContext) -> None:
    now = context.clock.now()
    notice: Notice | None = None
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
            notice = Notice("review_required", squad.id, review_gate_text(squad, tasks))
        elif squad.status is SquadStatus.RUNNING and has_failed(tasks):
            tx.put_squad(move_squad(squad, SquadStatus.FAILED))
            notice = Notice("squad_failed", squad.id, f"Squad {squad.id} failed.")
    if notice is not None:
        context.notify(notice)


def has_failed(tasks: Mapping[str, Task]) -> bool:
    statuses = [t.status for t in tasks.values() if t.status is not TaskStatus.CANCELLED]
    if TaskStatus.FAILED not in statuses:
        return False
    if any(s in {TaskStatus.PENDING, TaskStatus.IN_PROGRESS} for s in statuses):
        return False
    return all(s in {TaskStatus.DONE, TaskStatus.BLOCKED, TaskStatus.FAILED} for s in statuses)


def review_gate_text(squad: Squad, tasks: Mapping[str, Task]) -> str:
    """The review gate. In file mode it names only the spec identity and task records."""
    lines = [f"Squad {squad.id} is awaiting orchestrator review."]
    if squad.spec is not None:
        lines.append(f"Canonical spec: {squad.spec.path} (SHA-256 {squad.spec.sha256}).")
        for task_id in sorted(tasks):
            lines.append(f"- {task_id}: {tasks[task_id].status} (task.json in the squad directory)")
    else:
        for task_id in sorted(tasks):
            task = tasks[task_id]
            lines.append(f"- {task_id} ({task.agent}): {task.title} [{task.status}]")
    lines.append("Record a verdict with squad_review (pass, pass_with_issues or fail).")
    return "\n".join(lines)
