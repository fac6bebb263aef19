"""The dependency graph of one squad's tasks."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping

from domain.spec.plan import find_cycle
from domain.squad.model import Task, TaskStatus


def dependents_of(tasks: Mapping[str, Task], task_id: str) -> list[str]:
    return sorted(t.id for t in tasks.values() if task_id in t.depends)


def descendants_of(tasks: Mapping[str, Task], task_id: str) -> list[str]:
    """Every task that depends on ``task_id`` directly or transitively, breadth-first."""
    seen: set[str] = set()
    order: list[str] = []
    queue = deque([task_id])
    while queue:
        current = queue.popleft()
        for dependent in dependents_of(tasks, current):
            if dependent not in seen:
                seen.add(dependent)
                order.append(dependent)
                queue.append(dependent)
    return order


def deps_done(tasks: Mapping[str, Task], task: Task) -> bool:
    """Every dependency exists and is done; cancelled or missing ones never satisfy."""
    return all(dep in tasks and tasks[dep].status is TaskStatus.DONE for dep in task.depends)


def is_ready(tasks: Mapping[str, Task], task: Task) -> bool:
    return task.status is TaskStatus.PENDING and deps_done(tasks, task)


def cycle_through(tasks: Mapping[str, Iterable[str]]) -> list[str] | None:
    """A cycle ``[a, b, ..., a]`` in a ``{task: depends}`` graph, or ``None``."""
    return find_cycle({k: list(v) for k, v in tasks.items()})
