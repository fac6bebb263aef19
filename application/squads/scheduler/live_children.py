"""The children one scheduler spawned and still holds, by task id.

Each is a ``ChildSession``: started and killed through it like every face's child. Its stream is
read by the scheduler's pump (the store keeps the durable record, the monitor its watch), so the
session is not fed the events and keeps nothing of them."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from application.child.session import ChildSession
from application.ports import ChildHandle
from domain.squad.model import Task, TaskStatus
from domain.squad.monitor import ChildWatch


@attrs.define
class LiveChild:
    session: ChildSession
    task_id: str
    agent: str
    # What the parent itself saw on this child's stream: its session, and the raw arguments of
    # every tool call it made (grounding, domain/attestation/grounding.py).
    session_file: str | None = None
    raw_arguments: dict[str, object] = attrs.field(factory=dict)
    # What the monitor remembers of this child (domain/squad/monitor.py); set when first seen.
    watch: ChildWatch | None = None
    # When the monitor's advisor last steered it, while no event has come since: still quiet
    # one more steer-to-escalation gap later, the orchestrator is told after all.
    advised_at: float | None = None

    @property
    def handle(self) -> ChildHandle:
        handle = self.session.handle
        assert handle is not None, "a live child was started"
        return handle


def stop_all(live: dict[str, LiveChild]) -> list[str]:
    """Kill every child and forget it; returns the ids of the tasks they ran."""
    task_ids = list(live)
    for child in live.values():
        child.session.kill()
    live.clear()
    return task_ids


def stop_orphans(live: dict[str, LiveChild], tasks: Mapping[str, Task]) -> None:
    """Children whose task another process paused, cancelled or re-blocked are stopped."""
    for task_id, child in list(live.items()):
        task = tasks.get(task_id)
        if task is None or task.status is not TaskStatus.IN_PROGRESS:
            child.session.kill()
            del live[task_id]
