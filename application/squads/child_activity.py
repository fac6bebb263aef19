"""What each running child of a squad is doing now, read from the squad's committed records: its
current tool or latest line (the words the flow row uses: ``tool <name>`` or the first line of
its latest message, redacted since it is content) and how long its task has run. Reading never
writes anything."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import attrs

from application.ports import Clock, Store
from application.squads.status import SquadStatusReport
from domain.flows.redact import redact
from domain.squad.messages import Message, MessageKind
from domain.squad.model import SquadStatus, Task, TaskStatus

DOING_CHARS = 120
CHILD_KINDS = frozenset({MessageKind.TOOL, MessageKind.TEXT})
"""The kinds of history entry a child's own stream writes (``child_events.py``)."""
QUIET_SQUADS = frozenset({SquadStatus.DONE, SquadStatus.FAILED})


@attrs.frozen
class ChildActivity:
    """A running task's current tool or latest line (``None`` before its first) and its time
    since it started (``None`` when no start is recorded)."""

    doing: str | None
    elapsed_seconds: float | None


ActivityKey = tuple[str, str]
"""(squad id, task id)."""


def doing_text(message: Message) -> str:
    """``tool <name>`` for a tool the child started, else its message's first line."""
    if message.kind is MessageKind.TOOL:
        return f"tool {message.text}"
    line = next((part.strip() for part in message.text.splitlines() if part.strip()), "")
    line = redact(line)
    return line if len(line) <= DOING_CHARS else line[: DOING_CHARS - 1] + "…"


def child_history(messages: Sequence[Message]) -> list[Message]:
    """The entries the child itself wrote (tools started, non-empty text), oldest first."""
    return [m for m in messages if m.kind in CHILD_KINDS and m.text.strip()]


def elapsed_seconds(task: Task, now: datetime) -> float | None:
    if task.started is None:
        return None
    end = task.completed if task.completed is not None else now
    return max(0.0, (end - task.started).total_seconds())


@attrs.frozen
class ChildActivities:
    """Reads the activity of every in-progress task of the squads given."""

    store: Store
    clock: Clock

    def __call__(self, reports: Sequence[SquadStatusReport]) -> dict[ActivityKey, ChildActivity]:
        found: dict[ActivityKey, ChildActivity] = {}
        now = self.clock.now()
        for report in reports:
            squad_id = report.squad.id
            running = [t.task_id for t in report.tasks if t.status is TaskStatus.IN_PROGRESS]
            if report.squad.status in QUIET_SQUADS or not running:
                continue
            tasks = self.store.snapshot(squad_id).tasks
            for task_id in running:
                history = child_history(self.store.messages(squad_id, task_id))
                task = tasks.get(task_id)
                found[(squad_id, task_id)] = ChildActivity(
                    doing=doing_text(history[-1]) if history else None,
                    elapsed_seconds=None if task is None else elapsed_seconds(task, now),
                )
        return found
