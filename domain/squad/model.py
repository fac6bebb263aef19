"""Squad and task values with the upstream fields (pi-squad-upstream.md §1).

Timestamps are aware UTC datetimes; rendering them is the store's business.
"""

from __future__ import annotations

import enum
from datetime import datetime

import attrs

from domain.spec.model import SquadConfig, Thinking
from domain.squad.ids import SQUAD_ID_PATTERN, TASK_ID_PATTERN


class SquadStatus(enum.StrEnum):
    RUNNING = "running"
    PAUSED = "paused"
    REVIEW = "review"
    DONE = "done"
    FAILED = "failed"


class TaskStatus(enum.StrEnum):
    PENDING = "pending"
    BLOCKED = "blocked"
    IN_PROGRESS = "in_progress"
    DONE = "done"
    FAILED = "failed"
    SUSPENDED = "suspended"
    CANCELLED = "cancelled"


def _aware(_instance: object, attribute: attrs.Attribute[datetime], value: datetime) -> None:
    if value.utcoffset() is None:
        raise ValueError(f"{attribute.name} must be timezone-aware")


@attrs.frozen(kw_only=True)
class SpecRef:
    """``Squad.spec`` of contract §5: the identity of the one canonical spec of a file squad."""

    schema_version: int = 1
    sha256: str
    bytes: int = attrs.field(validator=attrs.validators.gt(0))
    path: str
    chunk_bytes: int = 32768
    chunk_count: int = attrs.field(validator=attrs.validators.gt(0))


@attrs.frozen
class AgentSetting:
    model: str | None
    thinking: Thinking | None


@attrs.frozen
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    turns: int = 0


@attrs.frozen
class Task:
    id: str = attrs.field(validator=attrs.validators.matches_re(TASK_ID_PATTERN))
    title: str
    description: str
    agent: str
    status: TaskStatus
    depends: tuple[str, ...]
    created: datetime = attrs.field(validator=_aware)
    inherit_context: bool = False
    started: datetime | None = attrs.field(
        default=None, validator=attrs.validators.optional(_aware)
    )
    completed: datetime | None = attrs.field(
        default=None, validator=attrs.validators.optional(_aware)
    )
    output: str | None = None
    error: str | None = None
    usage: Usage = Usage()


@attrs.frozen
class Squad:
    id: str = attrs.field(validator=attrs.validators.matches_re(SQUAD_ID_PATTERN))
    goal: str
    status: SquadStatus
    created: datetime = attrs.field(validator=_aware)
    cwd: str
    config: SquadConfig
    agents: tuple[tuple[str, AgentSetting], ...] = ()
    spec: SpecRef | None = None
    session_file: str | None = None

    @property
    def is_file_squad(self) -> bool:
        return self.spec is not None
