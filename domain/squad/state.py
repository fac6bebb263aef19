"""The squad aggregate's state: one squad and its tasks, and the rules that change them together.

Pure. A :class:`SquadState` is an immutable value; every rule returns a new state (with the
system notes it wants appended to task histories) or raises a :class:`SquadOperationError`
whose message says what was refused and why, before anything changed. The application loads a
state inside one store transaction, asks a rule, and writes back exactly what differs
(``application/squads/squad_state.py``); the clock's ``now`` is an argument, never read here.

The rules here are shared by the scheduler, review and the operator's ``squad_modify``: rework
of a review or done squad, unblocking, descendant invalidation, reopening. The operator's own
actions are in :mod:`domain.squad.decisions`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import attrs

from domain.errors import ErrorCode, SquadOperationError
from domain.squad.graph import deps_done, descendants_of, is_ready
from domain.squad.ids import SAFE_TASK_ID_PATTERN
from domain.squad.messages import MessageKind
from domain.squad.model import Squad, SquadStatus, Task, TaskStatus
from domain.squad.transitions import move_squad, move_task

MARKED_DONE_OUTPUT = "Marked done (recovered/admin)"
# The durable marker of an operator's budget reset (resume_task, squad resume, complete_task):
# a system message in the task's history whose text starts with this. A scheduler in any process
# resets its spawn-retry and attestation-rejection counts for the task when it sees a new one.
BUDGETS_RESET = "Retry and attestation-rejection budgets reset"


def show_id(value: str) -> str:
    """An ID as a message may show it: quoted once it has a task directory's shape."""
    return f"'{value}'" if SAFE_TASK_ID_PATTERN.match(value) else "(an id not shown)"


def refuse(code: ErrorCode, message: str) -> SquadOperationError:
    return SquadOperationError(code, message)


def to_status(task: Task, status: TaskStatus, **changes: Any) -> Task:
    """``move_task``, or just the field changes when the task already has ``status``."""
    if task.status is status:
        return attrs.evolve(task, **changes)
    return move_task(task, status, **changes)


@attrs.frozen
class Note:
    """A message the state wants appended to one task's history."""

    task_id: str
    text: str
    kind: MessageKind = MessageKind.SYSTEM


def _frozen(tasks: Mapping[str, Task]) -> Mapping[str, Task]:
    return MappingProxyType(dict(tasks))


@attrs.frozen
class SquadState:
    squad: Squad
    tasks: Mapping[str, Task] = attrs.field(converter=_frozen)
    notes: tuple[Note, ...] = ()

    # -- building blocks ----------------------------------------------------------------------

    def with_task(self, task: Task) -> SquadState:
        return attrs.evolve(self, tasks={**self.tasks, task.id: task})

    def with_squad(self, squad: Squad) -> SquadState:
        return attrs.evolve(self, squad=squad)

    def note(self, task_id: str, text: str, kind: MessageKind = MessageKind.SYSTEM) -> SquadState:
        return attrs.evolve(self, notes=(*self.notes, Note(task_id, text, kind)))

    def task(self, task_id: str) -> Task:
        """The task, or ``TASK_NOT_FOUND`` listing the squad's tasks."""
        found = self.tasks.get(task_id)
        if found is None:
            known = ", ".join(sorted(self.tasks)) or "(none)"
            raise refuse(
                ErrorCode.TASK_NOT_FOUND,
                f"taskId {show_id(task_id)} is not a task of squad '{self.squad.id}'; "
                f"its tasks are: {known}",
            )
        return found

    def ready_target(self, task: Task) -> TaskStatus:
        """Where a reopened task goes: pending when its dependencies are done, else blocked."""
        return TaskStatus.PENDING if deps_done(dict(self.tasks), task) else TaskStatus.BLOCKED

    def budgets_reset(self, task_id: str, by: str) -> SquadState:
        return self.note(task_id, f"{BUDGETS_RESET} by {by}.")

    # -- rules shared by the scheduler, review and operations ---------------------------------

    def begin_rework(self) -> SquadState:
        """A review or done squad gets new work: back to running, its review into history."""
        squad = self.squad
        if squad.status not in {SquadStatus.REVIEW, SquadStatus.DONE}:
            return self
        history = squad.review_history + ((squad.review,) if squad.review is not None else ())
        return self.with_squad(
            move_squad(squad, SquadStatus.RUNNING, review=None, review_history=history)
        )

    def reopen_for_work(self) -> SquadState:
        """Reopen a squad that has work again: review/done rework; a failed squad runs again
        when something is runnable. A paused squad stays paused (the operator's pause wins)."""
        state = self.begin_rework()
        if state.squad.status is SquadStatus.FAILED:
            tasks = dict(state.tasks)
            if any(is_ready(tasks, t) for t in tasks.values()):
                state = state.with_squad(move_squad(state.squad, SquadStatus.RUNNING))
        return state

    def unblock_ready(self) -> SquadState:
        state = self
        for candidate in self.tasks.values():
            if candidate.status is TaskStatus.BLOCKED and deps_done(state.tasks, candidate):
                state = state.with_task(move_task(candidate, TaskStatus.PENDING))
        return state

    def invalidate_descendants(self, task_id: str) -> SquadState:
        """Every non-cancelled descendant becomes blocked with ``completed`` and ``error``
        cleared (upstream descendant invalidation); the scheduler stops their live children."""
        state = self
        for descendant_id in descendants_of(dict(self.tasks), task_id):
            descendant = state.tasks[descendant_id]
            if descendant.status in {TaskStatus.CANCELLED, TaskStatus.BLOCKED}:
                continue
            state = state.with_task(
                move_task(descendant, TaskStatus.BLOCKED, completed=None, error=None)
            ).note(descendant_id, f"Dependency ancestry reopened at {task_id}.")
        return state

    def reopen_with_descendants(self, task_id: str, error: str | None) -> SquadState:
        """Reopen one task on its own session (pending when its dependencies are done, else
        blocked), re-block its descendants first, and begin rework of a review/done squad."""
        state = self.invalidate_descendants(task_id)
        task = state.tasks[task_id]
        state = state.with_task(
            to_status(task, state.ready_target(task), completed=None, error=error)
        )
        if error is not None:
            state = state.note(task_id, error)
        return state.begin_rework()
