"""Every stop of a driver ends with the command that moves the squad on."""

from __future__ import annotations

import pytest

from application.squads.next_steps import next_command
from domain.squad.model import Task, TaskStatus
from tests.builders import task_record

RUN = "pi-squad run --squad s1"
RESUME = f"pi-squad modify s1 resume, then {RUN}"


def tasks(**statuses: TaskStatus) -> dict[str, Task]:
    return {task_id: task_record(task_id, status=status) for task_id, status in statuses.items()}


@pytest.mark.parametrize(
    ("reason", "statuses", "expected"),
    [
        ("review", {}, "pi-squad report s1 --out report.md, then pi-squad review s1 ..."),
        ("done", {}, "pi-squad report s1 --out report.md"),
        ("paused", {}, RESUME),
        ("quarantined", {}, "pi-squad verify s1 (its records were tampered with or lost)"),
        ("interrupted", {"a": TaskStatus.SUSPENDED}, RESUME),
        ("interrupted", {"a": TaskStatus.PENDING}, RUN),
        (
            "stalled",
            {"a": TaskStatus.SUSPENDED, "b": TaskStatus.BLOCKED},
            "pi-squad status s1 (why each task stopped), then " + RESUME,
        ),
        (
            "failed",
            {"a": TaskStatus.FAILED},
            "pi-squad status s1 (why each task stopped), then " + RESUME,
        ),
        ("failed", {"a": TaskStatus.DONE}, "pi-squad status s1"),
    ],
)
def test_the_next_command_follows_why_the_driver_stopped(
    reason: str, statuses: dict[str, TaskStatus], expected: str
) -> None:
    assert next_command("s1", reason, tasks(**statuses)) == expected
