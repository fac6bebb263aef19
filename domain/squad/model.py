"""Squad and task values with the upstream fields (pi-squad-upstream.md §1).

Timestamps are aware UTC datetimes; rendering them is the store's business.
"""

from __future__ import annotations

import enum
from datetime import datetime

import attrs

from domain.names import Thinking
from domain.spec.model import SquadConfig
from domain.squad.ids import SAFE_TASK_ID_PATTERN, SQUAD_ID_PATTERN
from domain.usage import Usage


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
class SessionBinding:
    """The task's Pi session: bound once, then only ever resumed."""

    file: str
    session_id: str | None = None


@attrs.frozen
class Task:
    id: str = attrs.field(validator=attrs.validators.matches_re(SAFE_TASK_ID_PATTERN))
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
    usage: Usage = attrs.field(factory=Usage)
    session: SessionBinding | None = None
    fork_from_task_id: str | None = None
    file_spec_delta: bool = False
    retry_of: str | None = None
    retry_count: int | None = None
    qa_feedback: str | None = None
    monitor: str | None = None
    """The monitor's last action on this task's child
    (``application.squads.scheduler.monitoring``)."""

    @property
    def is_live_status(self) -> bool:
        return self.status is TaskStatus.IN_PROGRESS


class Actor(enum.StrEnum):
    """Who asked for a squad operation, known by the way it came: a person typing ``/squad``
    in Pi, the model calling ``squad_modify``, or someone at a terminal (``pi-squad modify``)."""

    PERSON = "person"
    MODEL = "model"
    TERMINAL = "terminal"


CANCELLED = "cancelled"


class ReviewStatus(enum.StrEnum):
    PENDING = "pending"
    PASSED = "passed"
    FAILED = "failed"


class Verdict(enum.StrEnum):
    PASS = "pass"
    PASS_WITH_ISSUES = "pass_with_issues"
    FAIL = "fail"


@attrs.frozen
class Review:
    status: ReviewStatus
    requested_at: datetime = attrs.field(validator=_aware)
    completed_at: datetime | None = attrs.field(
        default=None, validator=attrs.validators.optional(_aware)
    )
    verdict: Verdict | None = None
    contract_checks: tuple[str, ...] = ()
    diff_review: str = ""
    verification_evidence: tuple[str, ...] = ()
    integration_evidence: str = ""
    issues: tuple[str, ...] = ()
    notified_at: datetime | None = attrs.field(
        default=None, validator=attrs.validators.optional(_aware)
    )


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
    review: Review | None = None
    review_history: tuple[Review, ...] = ()
    quarantine: str | None = None
    # The pinned task set: every task the parent ever recorded for this squad, in order. A task
    # named here whose record is missing, unreadable or misnamed is an integrity failure, never
    # "no such task" (docs/architecture.md, "Trust boundary").
    task_ids: tuple[str, ...] = ()
    # "landlock" once children ran confined, "none" as soon as one ran without it (sticky).
    isolation: str | None = None
    # The isolation layers that held for every child so far, as ``IsolationLevel.label``
    # (``domain/isolation_level.py``): the weakest any child ran under. ``None`` before the
    # first child, or where earlier children ran before layers were recorded.
    isolation_layers: str | None = None
    # Set by a whole-squad cancel: a cancelled squad is never healed back to running by a
    # scheduler that still holds ready work; only an explicit resume clears it.
    cancelled_at: datetime | None = attrs.field(
        default=None, validator=attrs.validators.optional(_aware)
    )
    # Who asked for that cancel; ``None`` on a record written before it was kept.
    cancelled_by: Actor | None = None
    # Set when the person dismisses the squad from the main Pi's widget and footer (``/squad
    # dismiss``); any later resume clears it, so a squad at work again is shown again.
    dismissed_at: datetime | None = attrs.field(
        default=None, validator=attrs.validators.optional(_aware)
    )
    # Set when the squad publishes an attested flow's brief (``application.flows.attested``):
    # its canonical copy is that brief, not a squad spec, and its tasks are the flow's runs.
    flow_id: str | None = None

    @property
    def is_file_squad(self) -> bool:
        return self.spec is not None

    @property
    def status_word(self) -> str:
        """The status as a person reads it: a squad stopped by a whole-squad cancel is
        ``cancelled`` (its record says ``failed``, as upstream's does)."""
        if self.status is SquadStatus.FAILED and self.cancelled_at is not None:
            return CANCELLED
        return str(self.status)

    def agent_setting(self, name: str) -> AgentSetting | None:
        for agent_name, setting in self.agents:
            if agent_name == name:
                return setting
        return None
