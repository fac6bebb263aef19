"""What may wrap any spawning mode (brief §8): a person's ``checkpoint`` before the first child
or before the result returns, and ``reflexion``, the project's file of lessons from earlier
runs. Values only; ``application.flows.checkpoints`` asks and writes."""

from __future__ import annotations

import enum

import attrs

DEFAULT_REFLECTIONS_FILE = ".pi/flow-reflections.jsonl"
DEFAULT_MAX_ENTRIES = 5
MAX_ENTRIES = 20


class CheckpointPoint(enum.StrEnum):
    # Once the call is admitted, before its first child spawns.
    SPAWN = "spawn"
    # Once the children settled, before the result returns to the caller.
    FINALIZE = "finalize"


@attrs.frozen
class Checkpoint:
    """``checkpoint``: the person is asked at ``before``; ``message`` is shown with the
    question."""

    before: CheckpointPoint = CheckpointPoint.SPAWN
    message: str | None = None


@attrs.frozen
class Reflexion:
    """``reflexion``: when ``enabled``, the last ``max_entries`` lessons of ``file`` (relative
    to the call's directory, never outside it) are appended to the top-level task, and a run
    that spawned a child appends one lesson."""

    enabled: bool
    file: str = DEFAULT_REFLECTIONS_FILE
    max_entries: int = DEFAULT_MAX_ENTRIES
