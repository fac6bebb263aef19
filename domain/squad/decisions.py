"""The operator's actions on a squad (``squad_modify``) as pure decisions.

Each function takes a :class:`~domain.squad.state.SquadState` and returns a :class:`Decision`:
the new state, the text the operator reads, whether anything changed and whose budgets were
reset; or raises a :class:`SquadOperationError` before anything changed. What needs a port (the
agent catalogue, the attestation check) is done by the caller, ``application/squads/operations.py``;
the checks of the operator's input are in :mod:`domain.squad.task_input`.
"""

from __future__ import annotations

from datetime import datetime

import attrs

from domain.errors import ErrorCode
from domain.squad.graph import cycle_through, dependents_of, deps_done, is_ready
from domain.squad.messages import MessageKind
from domain.squad.model import Actor, ReviewStatus, SquadStatus, Task, TaskStatus
from domain.squad.state import MARKED_DONE_OUTPUT, SquadState, refuse, to_status
from domain.squad.task_input import (
    NewTask,
    check_dependencies,
    check_fork_source,
    check_new_task,
    check_placement,
)
from domain.squad.transitions import move_squad, move_task

# operations.py reaches the input checks through this module, as it did before they moved.
__all__ = [
    "Decision",
    "NewTask",
    "add_task",
    "cancel",
    "cancel_task",
    "check_new_task",
    "check_placement",
    "complete_task",
    "dismiss",
    "pause",
    "pause_task",
    "resume",
    "resume_task",
    "set_dependencies",
]


@attrs.frozen
class Decision:
    """An operator action's outcome: the new state and what the operator is told."""

    state: SquadState
    text: str
    changed: bool = True
    reset_budgets: tuple[str, ...] = ()


def _rotate_to(cycle: list[str], start: str) -> list[str]:
    """``[a, b, a]`` shown from ``start`` when it is on the cycle: ``[b, a, b]``."""
    ring = cycle[:-1]
    if start not in ring:
        return cycle
    at = ring.index(start)
    rotated = ring[at:] + ring[:at]
    return [*rotated, start]


def add_task(state: SquadState, new: NewTask, now: datetime) -> Decision:
    """The new task (its agent checked by the caller, which needs the catalogue)."""
    squad = state.squad
    check_placement(state, new)
    if new.fork_from_task is not None:
        check_fork_source(state.tasks, new)
    task = Task(
        id=new.id,
        title=new.title,
        description=new.description,
        agent=new.agent,
        status=TaskStatus.PENDING,
        depends=new.depends,
        created=now,
        inherit_context=new.inherit_context,
        fork_from_task_id=new.fork_from_task,
        file_spec_delta=squad.spec is not None,
    )
    if not deps_done(dict(state.tasks), task):
        task = attrs.evolve(task, status=TaskStatus.BLOCKED)
    state = state.with_task(task).note(task.id, f"Task added by the orchestrator ({task.status}).")
    state = state.reopen_for_work()
    text = f"Task '{new.id}' added to squad '{squad.id}' ({task.status})."
    if state.squad.status is SquadStatus.PAUSED:
        text += " The squad is paused; resume it to run the task."
    return Decision(state, text)


def set_dependencies(state: SquadState, task_id: str, depends: tuple[str, ...]) -> Decision:
    task = state.task(task_id)
    if task.status in {TaskStatus.IN_PROGRESS, TaskStatus.DONE}:
        raise refuse(
            ErrorCode.OPERATION_REFUSED,
            f"set_dependencies refused: task '{task_id}' is {task.status}; dependencies "
            "can change only while a task is pending, blocked, failed, suspended or "
            "cancelled (pause it first, or add a new task)",
        )
    check_dependencies(state.tasks, task_id, depends, field="depends")
    graph = {t.id: list(t.depends) for t in state.tasks.values()}
    graph[task_id] = list(depends)
    cycle = cycle_through(graph)
    if cycle is not None:
        raise refuse(
            ErrorCode.DEPENDENCY_CYCLE,
            f"Dependency cycle detected: {' -> '.join(_rotate_to(cycle, task_id))}; "
            "no dependency was changed",
        )
    updated = attrs.evolve(task, depends=depends)
    state = state.with_task(updated)
    if updated.status in {TaskStatus.PENDING, TaskStatus.BLOCKED}:
        updated = to_status(updated, state.ready_target(updated))
        state = state.with_task(updated)
    shown = ", ".join(depends) or "(none)"
    state = state.note(task_id, f"Dependencies set by the orchestrator: {shown}.")
    if is_ready(dict(state.tasks), updated) and state.squad.status is not SquadStatus.PAUSED:
        state = state.reopen_for_work()
    text = f"Dependencies of '{task_id}' set to [{', '.join(depends)}] ({updated.status})."
    return Decision(state, text)


def cancel_task(state: SquadState, task_id: str, now: datetime) -> Decision:
    task = state.task(task_id)
    if task.status is TaskStatus.CANCELLED:
        return Decision(
            state, f"Task '{task_id}' is already cancelled; nothing changed.", changed=False
        )
    tasks = dict(state.tasks)
    live_dependents = [
        tasks[d]
        for d in dependents_of(tasks, task_id)
        if tasks[d].status is not TaskStatus.CANCELLED
    ]
    if live_dependents:
        listing = "\n".join(f"- {d.id} [{d.status}]" for d in live_dependents)
        raise refuse(
            ErrorCode.OPERATION_REFUSED,
            f"cancel_task refused: task '{task_id}' has dependents that are not "
            f"cancelled:\n{listing}\nRemove the dependency with set_dependencies (or "
            "cancel those tasks first); nothing was cancelled.",
        )
    state = state.with_task(move_task(task, TaskStatus.CANCELLED, error=None, completed=now))
    state = state.note(task_id, "Task cancelled by the orchestrator.")
    squad = state.squad
    if squad.status is SquadStatus.DONE or (
        squad.status is SquadStatus.REVIEW
        and squad.review is not None
        and squad.review.status is not ReviewStatus.PENDING
    ):
        state = state.begin_rework()
    return Decision(state, f"Task '{task_id}' cancelled.")


def pause_task(state: SquadState, task_id: str) -> Decision:
    task = state.task(task_id)
    if task.status is TaskStatus.CANCELLED:
        raise refuse(
            ErrorCode.OPERATION_REFUSED,
            f"pause_task refused: task '{task_id}' is cancelled; resume_task revives it",
        )
    if task.status is TaskStatus.DONE:
        raise refuse(
            ErrorCode.OPERATION_REFUSED,
            f"pause_task refused: task '{task_id}' is done; there is nothing to pause "
            "(resume_task reopens it)",
        )
    if task.status is TaskStatus.SUSPENDED:
        return Decision(
            state, f"Task '{task_id}' is already paused; nothing changed.", changed=False
        )
    state = state.with_task(move_task(task, TaskStatus.SUSPENDED))
    state = state.note(task_id, "Task paused by the orchestrator.")
    return Decision(
        state, f"Task '{task_id}' paused (suspended); its session is kept for resume_task."
    )


def resume_task(state: SquadState, task_id: str) -> Decision:
    task = state.task(task_id)
    if task.status is TaskStatus.IN_PROGRESS:
        return Decision(
            state,
            f"Task '{task_id}' is already running; no duplicate resume was started.",
            changed=False,
        )
    if task.status is TaskStatus.DONE:
        state = state.invalidate_descendants(task_id)
    target = state.ready_target(task)
    state = state.with_task(to_status(task, target, error=None, completed=None))
    state = state.note(task_id, f"Task resumed by the orchestrator ({target}).")
    state = state.budgets_reset(task_id, "resume_task").reopen_for_work()
    text = f"Task '{task_id}' resumed ({target})."
    if state.squad.status is SquadStatus.PAUSED:
        text += " The squad is paused; resume it to run the task."
    return Decision(state, text, reset_budgets=(task_id,))


def complete_task(state: SquadState, task_id: str, output: str | None, now: datetime) -> Decision:
    """The operator's completion; the caller has validated the attestation first."""
    task = state.task(task_id)
    if task.status is TaskStatus.DONE:
        text = f"Task '{task_id}' is already done; nothing changed."
        return Decision(state, text, changed=False)
    if task.status is TaskStatus.CANCELLED:
        raise refuse(
            ErrorCode.OPERATION_REFUSED,
            f"complete_task refused: task '{task_id}' is cancelled; resume_task revives it first",
        )
    accepted = output if output is not None else task.output
    done = move_task(
        task,
        TaskStatus.DONE,
        completed=now,
        error=None,
        output=accepted if accepted is not None else MARKED_DONE_OUTPUT,
    )
    state = state.with_task(done).note(
        task_id, "Task marked done by the orchestrator", MessageKind.DONE
    )
    state = state.budgets_reset(task_id, "complete_task").unblock_ready().reopen_for_work()
    return Decision(
        state,
        f"Task '{task_id}' marked done — dependents unblocked and scheduled.",
        reset_budgets=(task_id,),
    )


def _suspend_in_progress(state: SquadState, note: str) -> tuple[SquadState, list[str]]:
    suspended = []
    for task in list(state.tasks.values()):
        if task.status is TaskStatus.IN_PROGRESS:
            state = state.with_task(move_task(task, TaskStatus.SUSPENDED)).note(task.id, note)
            suspended.append(task.id)
    return state, suspended


def pause(state: SquadState) -> Decision:
    squad = state.squad
    if squad.status is SquadStatus.PAUSED:
        return Decision(
            state, f"Squad '{squad.id}' is already paused; nothing changed.", changed=False
        )
    if squad.status not in {SquadStatus.RUNNING, SquadStatus.FAILED}:
        raise refuse(
            ErrorCode.OPERATION_REFUSED,
            f"pause refused: squad '{squad.id}' is {squad.status}; only a running or "
            "failed squad can be paused",
        )
    state, suspended = _suspend_in_progress(state, "Task suspended: squad paused.")
    state = state.with_squad(move_squad(squad, SquadStatus.PAUSED))
    return Decision(
        state, f"Squad '{squad.id}' paused ({len(suspended)} running task(s) suspended)."
    )


def resume(state: SquadState) -> Decision:
    resumed: list[str] = []
    for task in sorted(state.tasks.values(), key=lambda t: t.id):
        if task.status not in {TaskStatus.SUSPENDED, TaskStatus.FAILED}:
            continue  # cancelled tasks are untouched; only resume_task revives one
        target = state.ready_target(task)
        state = state.with_task(move_task(task, target, error=None, completed=None))
        state = state.note(task.id, f"Task resumed with its squad ({target}).")
        state = state.budgets_reset(task.id, "resume")
        resumed.append(task.id)
    squad = state.squad
    if squad.cancelled_at is not None or squad.dismissed_at is not None:
        squad = attrs.evolve(squad, cancelled_at=None, cancelled_by=None, dismissed_at=None)
        state = state.with_squad(squad)
    if squad.status in {SquadStatus.PAUSED, SquadStatus.FAILED}:
        state = state.with_squad(move_squad(squad, SquadStatus.RUNNING))
    elif (
        squad.status is SquadStatus.REVIEW
        and squad.review is not None
        and squad.review.status is ReviewStatus.FAILED
        and resumed
    ):
        state = state.begin_rework()
    done = sum(1 for t in state.tasks.values() if t.status is TaskStatus.DONE)
    active = sum(1 for t in state.tasks.values() if t.status is not TaskStatus.CANCELLED)
    return Decision(
        state,
        f"Squad '{squad.id}' resumed ({done}/{active} tasks done; {len(resumed)} task(s) "
        f"resumed; squad {state.squad.status}).",
        reset_budgets=tuple(resumed),
    )


def cancel(state: SquadState, now: datetime, by: Actor | None = None) -> Decision:
    squad = state.squad
    if squad.status is SquadStatus.DONE:
        raise refuse(
            ErrorCode.OPERATION_REFUSED,
            f"cancel refused: squad '{squad.id}' is done and accepted; nothing runs",
        )
    state, suspended = _suspend_in_progress(state, "Task suspended: squad cancelled.")
    if squad.status is not SquadStatus.FAILED:
        squad = move_squad(squad, SquadStatus.FAILED)
    state = state.with_squad(attrs.evolve(squad, cancelled_at=now, cancelled_by=by))
    return Decision(
        state, f"Squad '{squad.id}' cancelled ({len(suspended)} running task(s) suspended)."
    )


def dismiss(state: SquadState, now: datetime) -> Decision:
    """Out of the main Pi's widget and footer until the squad is resumed; a running squad is
    refused (its work would go on unseen)."""
    squad = state.squad
    if squad.status is SquadStatus.RUNNING:
        raise refuse(
            ErrorCode.OPERATION_REFUSED,
            f"dismiss refused: squad '{squad.id}' is running; stop it first with "
            f"/squad pause {squad.id} or /squad cancel {squad.id}",
        )
    if squad.dismissed_at is not None or squad.status is SquadStatus.DONE:
        return Decision(state, f"Squad '{squad.id}' is not shown; nothing changed.", changed=False)
    state = state.with_squad(attrs.evolve(squad, dismissed_at=now))
    return Decision(
        state,
        f"Squad '{squad.id}' ({squad.status_word}) dismissed from the widget; "
        f"/squad resume {squad.id} brings it back to work and into view.",
    )
