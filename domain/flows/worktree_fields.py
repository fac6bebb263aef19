"""The fields of ``worktree`` (docs/flows.md, "worktree"): 2..8 writers, each in its own git
worktree on its own branch off ``base_ref``, merged into one integration branch, an integrator
for the conflicts, then an optional check command. Values only, every default applied."""

from __future__ import annotations

import attrs

from domain.errors import ErrorCode
from domain.flows.call_roles import AgentRef, FlowTask
from domain.flows.errors import refuse

# The integration branch's last name part: no writer may take it (``check_ids``).
INTEGRATION = "integration"


@attrs.frozen
class WorktreeTask(FlowTask):
    """One writer: a task with the ``id`` that names its branch and worktree. It has no
    ``cwd`` of its own: it works in its worktree."""

    id: str

    def as_task(self) -> FlowTask:
        """The writer's role alone, as admission resolves it."""
        return FlowTask(
            **{field.name: getattr(self, field.name) for field in attrs.fields(FlowTask)}
        )


def _citing(tasks: tuple[WorktreeTask, ...]) -> tuple[WorktreeTask, ...]:
    """Writers cite their evidence unless a task sets ``requireEvidence: false``."""
    return tuple(
        attrs.evolve(task, require_evidence=True) if task.require_evidence is None else task
        for task in tasks
    )


@attrs.frozen
class Worktree:
    """``worktree``: ``tasks`` written concurrently, each committed on its branch, merged into
    ``pi-flow/<run>/integration``; ``integrator`` resolves a merge conflict; ``check_command``
    (if any) runs in the integrated tree, stopped after ``check_timeout_ms`` (``None``: the
    call's ``timeoutMs``). ``require_clean``: refuse a source checkout with uncommitted
    changes (they would not be in ``base_ref``, so the writers would not see them)."""

    tasks: tuple[WorktreeTask, ...] = attrs.field(converter=_citing)
    base_ref: str = "HEAD"
    integrator: AgentRef = attrs.field(factory=lambda: AgentRef(agent="operator"))
    check_command: str | None = None
    check_timeout_ms: int | None = None
    require_clean: bool = True

    def roles(self, goal: str) -> list[tuple[str, FlowTask]]:
        writers = [(f"$.worktree.tasks[{i}]", task.as_task()) for i, task in enumerate(self.tasks)]
        return [*writers, ("$.worktree.integrator", self.integrator.as_task(goal))]


def check_ids(worktree: Worktree | None) -> None:
    """Each writer's ``id`` names a branch: unique, and never the integration branch's name
    (``FLOW_INVALID`` before anything is created)."""
    if worktree is None:
        return
    seen: set[str] = set()
    for i, task in enumerate(worktree.tasks):
        if task.id == INTEGRATION or task.id in seen:
            taken = sorted(seen | {INTEGRATION})
            raise refuse(
                ErrorCode.FLOW_INVALID,
                f"$.worktree.tasks[{i}].id",
                f"id '{task.id}' names a branch another part of the flow already uses",
                measured=task.id,
                allowed=f"an id other than {', '.join(taken)}",
            )
        seen.add(task.id)
