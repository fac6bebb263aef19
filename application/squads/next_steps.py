"""What to type next when a driver stops: every stop line of ``pi-squad run`` (and ``demo``)
ends with the command that moves the squad on from where it stands."""

from __future__ import annotations

from collections.abc import Mapping

from domain.squad.model import Task, TaskStatus

INTERRUPTED = "interrupted"


def next_command(squad_id: str, reason: str, tasks: Mapping[str, Task]) -> str:
    """The next command for a squad whose driver stopped for ``reason`` (a squad status, or
    ``stalled``, ``quarantined`` or ``interrupted``)."""
    run = f"pi-squad run --squad {squad_id}"
    resume = f"pi-squad modify {squad_id} resume, then {run}"
    stopped = sorted(
        task_id
        for task_id, task in tasks.items()
        if task.status in {TaskStatus.FAILED, TaskStatus.SUSPENDED}
    )
    if reason == "review":
        return f"pi-squad report {squad_id} --out report.md, then pi-squad review {squad_id} ..."
    if reason == "done":
        return f"pi-squad report {squad_id} --out report.md"
    if reason == "paused":
        return resume
    if reason == "quarantined":
        return f"pi-squad verify {squad_id} (its records were tampered with or lost)"
    if reason in {"failed", "stalled"}:
        # A new driver never resumes a suspended task by itself (contract: pause semantics).
        if stopped:
            return f"pi-squad status {squad_id} (why each task stopped), then {resume}"
        return f"pi-squad status {squad_id}"
    if reason == INTERRUPTED and stopped:
        return resume
    return run
