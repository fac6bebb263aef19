"""Squads, tasks and reviews as immutable values, with the upstream fields."""

from domain.squad.ids import derive_squad_id, make_task_id
from domain.squad.model import (
    SpecRef,
    Squad,
    SquadStatus,
    Task,
    TaskStatus,
    Usage,
)

__all__ = [
    "SpecRef",
    "Squad",
    "SquadStatus",
    "Task",
    "TaskStatus",
    "Usage",
    "derive_squad_id",
    "make_task_id",
]
