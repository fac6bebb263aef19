"""Legal status transitions of tasks and squads (upstream semantics, contract §10).

A transition not in these tables is a programming error and raises ``IllegalTransition``; it is
never a silent no-op. Use cases check preconditions first and report refusals as coded errors.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import attrs

from domain.errors import legal_transition
from domain.squad.model import Squad, SquadStatus, Task, TaskStatus

T = TaskStatus
S = SquadStatus

TASK_TRANSITIONS: dict[TaskStatus, frozenset[TaskStatus]] = {
    # Spawned, unblocked work goes in_progress; everything can be paused, cancelled or
    # completed by an operator; reopening ancestry re-blocks.
    T.PENDING: frozenset({T.IN_PROGRESS, T.BLOCKED, T.SUSPENDED, T.CANCELLED, T.DONE, T.FAILED}),
    T.BLOCKED: frozenset({T.PENDING, T.SUSPENDED, T.CANCELLED, T.DONE, T.FAILED}),
    # Settlement accepts (done) or rejects (pending); exits retry (pending) or fail.
    T.IN_PROGRESS: frozenset({T.DONE, T.PENDING, T.BLOCKED, T.FAILED, T.SUSPENDED, T.CANCELLED}),
    # Reopened by mail, resume_task, or an invalid attestation found later.
    T.DONE: frozenset({T.PENDING, T.BLOCKED, T.CANCELLED}),
    T.FAILED: frozenset({T.PENDING, T.BLOCKED, T.SUSPENDED, T.CANCELLED, T.DONE}),
    T.SUSPENDED: frozenset({T.PENDING, T.BLOCKED, T.CANCELLED, T.DONE}),
    # Only an explicit resume_task revives a cancelled task.
    T.CANCELLED: frozenset({T.PENDING, T.BLOCKED}),
}

SQUAD_TRANSITIONS: dict[SquadStatus, frozenset[SquadStatus]] = {
    S.RUNNING: frozenset({S.REVIEW, S.FAILED, S.PAUSED}),
    S.PAUSED: frozenset({S.RUNNING, S.FAILED}),
    # A pass ends in done; rework (new or reopened work) returns to running; cancel fails it.
    S.REVIEW: frozenset({S.DONE, S.RUNNING, S.FAILED, S.PAUSED}),
    S.DONE: frozenset({S.RUNNING}),
    S.FAILED: frozenset({S.RUNNING, S.PAUSED}),
}


def move_task(task: Task, to: TaskStatus, **changes: Any) -> Task:
    status = legal_transition(TASK_TRANSITIONS, task.status, to, f"task {task.id}")
    return attrs.evolve(task, status=status, **changes)


def move_squad(squad: Squad, to: SquadStatus, **changes: Any) -> Squad:
    status = legal_transition(SQUAD_TRANSITIONS, squad.status, to, f"squad {squad.id}")
    return attrs.evolve(squad, status=status, **changes)


def reopen_task(task: Task, *, deps_done: bool, error: str | None = None) -> Task:
    """Back to work on the same session: pending when dependencies are done, else blocked."""
    return move_task(
        task,
        T.PENDING if deps_done else T.BLOCKED,
        completed=None,
        error=error,
    )


def start_task(task: Task, at: datetime) -> Task:
    return move_task(task, T.IN_PROGRESS, started=task.started or at, completed=None, error=None)
