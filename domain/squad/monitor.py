"""The monitor's rules for one live child, pure: a child that repeats the same tool call, one
that has gone quiet, one past its runtime ceiling, and one streaming a message past its size
bound. Time is a monotonic reading the caller
passes in; the monitor decides, the scheduler acts (steer, escalate, stop) and records it."""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping

import attrs

from domain.errors import ErrorCode, SquadOperationError

DEFAULT_REPEAT_LIMIT = 5
DEFAULT_IDLE_STEER_SECONDS = 180.0
DEFAULT_IDLE_ESCALATE_SECONDS = 360.0
DEFAULT_CEILING_SECONDS = 36_000.0
"""Ten hours, as a flow child's default timeout: a hard bound on one child's runtime, so that no
child runs (and bills) without end when nobody watches; ``PI_SQUAD_CEILING_MS`` sets another."""
DEFAULT_MESSAGE_BYTES = 256 * 1024
"""A hard bound on what one assistant message may stream (text, thinking and tool-call
arguments): about the largest answer a model's output limit allows (64k tokens). Pi parses a
growing tool argument again at every piece, so one of a few megabytes stalls the child for
minutes, then hours; ``PI_SQUAD_MAX_MESSAGE_BYTES`` sets another."""
STEER_PREFIX = "[squad monitor]"


class MonitorReason(enum.StrEnum):
    REPEATED_CALL = "repeated_call"
    IDLE = "idle"
    IDLE_ESCALATION = "idle_escalation"
    CEILING = "ceiling"
    MESSAGE_SIZE = "message_size"


class MonitorMove(enum.StrEnum):
    STEER = "steer"
    ESCALATE = "escalate"
    STOP = "stop"


@attrs.frozen
class MonitorPolicy:
    """``repeat_limit``: the same call this many times in a row is steered. ``idle_steer`` /
    ``idle_escalate``: seconds without any event before the child is steered, then the
    orchestrator told. ``ceiling``: seconds a task's child may run at all (``None``: no
    ceiling, for tests of the other rules; the environment always sets one).
    ``message_bytes``: what one assistant message may stream before the child is stopped."""

    repeat_limit: int = DEFAULT_REPEAT_LIMIT
    idle_steer: float = DEFAULT_IDLE_STEER_SECONDS
    idle_escalate: float = DEFAULT_IDLE_ESCALATE_SECONDS
    ceiling: float | None = DEFAULT_CEILING_SECONDS
    message_bytes: int = DEFAULT_MESSAGE_BYTES

    def __attrs_post_init__(self) -> None:
        if self.repeat_limit < 2:
            raise ValueError(f"repeat_limit is {self.repeat_limit}; it must be at least 2")
        if not 0 < self.idle_steer < self.idle_escalate:
            raise ValueError("0 < idle_steer < idle_escalate must hold")
        if self.ceiling is not None and self.ceiling <= 0:
            raise ValueError(f"ceiling is {self.ceiling}; it must be positive")
        if self.message_bytes <= 0:
            raise ValueError(f"message_bytes is {self.message_bytes}; it must be positive")


@attrs.frozen
class MonitorAction:
    move: MonitorMove
    reason: MonitorReason
    text: str
    """For a steer: the message the child receives. Otherwise: what the record and the
    orchestrator are told."""


@attrs.frozen
class ChildWatch:
    """What the monitor remembers of one live child."""

    started_at: float
    last_event_at: float
    last_call: str | None = None
    repeats: int = 0
    repeat_steered: bool = False
    idle_stage: int = 0  # 0 quiet never noticed, 1 steered, 2 escalated
    stopped: bool = False


MONITOR_VARIABLES = {
    "PI_SQUAD_REPEAT_LIMIT": "repeat_limit",
    "PI_SQUAD_IDLE_STEER_MS": "idle_steer",
    "PI_SQUAD_IDLE_ESCALATE_MS": "idle_escalate",
    "PI_SQUAD_CEILING_MS": "ceiling",
    "PI_SQUAD_MAX_MESSAGE_BYTES": "message_bytes",
}
# Counts, not milliseconds.
_WHOLE_NUMBERS = frozenset({"repeat_limit", "message_bytes"})


def policy_from_environment(environ: Mapping[str, str]) -> MonitorPolicy:
    """The monitor's policy as the environment sets it (milliseconds for the times; unset or
    empty keeps the default). A value that is not a positive integer, or idle thresholds out of
    order, is refused naming the variable, its value and what is allowed."""
    values: dict[str, float | int] = {}
    for name, field in MONITOR_VARIABLES.items():
        raw = environ.get(name, "").strip()
        if not raw:
            continue
        if not raw.isdigit() or int(raw) <= 0:
            raise SquadOperationError(
                ErrorCode.OPERATION_REFUSED,
                f"{name} is {raw!r}; allowed: a positive whole number"
                + ("" if field in _WHOLE_NUMBERS else " of milliseconds"),
            )
        values[field] = int(raw) if field in _WHOLE_NUMBERS else int(raw) / 1000.0
    try:
        return MonitorPolicy(**values)  # type: ignore[arg-type]
    except ValueError as exc:
        raise SquadOperationError(
            ErrorCode.OPERATION_REFUSED,
            f"monitor settings refused: {exc} (PI_SQUAD_REPEAT_LIMIT >= 2; "
            "PI_SQUAD_IDLE_STEER_MS < PI_SQUAD_IDLE_ESCALATE_MS)",
        ) from None


def watch_started(now: float) -> ChildWatch:
    return ChildWatch(started_at=now, last_event_at=now)


def call_key(tool_name: str, arguments: object) -> str:
    """Two calls are the same when their tool and canonical JSON arguments are."""
    try:
        text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(arguments)
    return f"{tool_name}\x00{text}"


def on_event(watch: ChildWatch, now: float) -> ChildWatch:
    """Any event: the child is not idle."""
    return attrs.evolve(watch, last_event_at=now, idle_stage=0)


def on_call(
    watch: ChildWatch, tool_name: str, arguments: object, now: float, policy: MonitorPolicy
) -> tuple[ChildWatch, MonitorAction | None]:
    """One tool call the child requested; a steer once the same call comes ``repeat_limit``
    times in a row (once per run of repeats)."""
    key = call_key(tool_name, arguments)
    repeats = watch.repeats + 1 if key == watch.last_call else 1
    watch = attrs.evolve(
        on_event(watch, now),
        last_call=key,
        repeats=repeats,
        repeat_steered=watch.repeat_steered and repeats > 1,
    )
    if repeats >= policy.repeat_limit and not watch.repeat_steered:
        text = (
            f"{STEER_PREFIX} You have made the same {tool_name} call {repeats} times in a row "
            "with the same arguments. It will not give a different result: stop repeating it, "
            "take stock of what you have, and either try a different approach or finish with "
            "your report."
        )
        return attrs.evolve(watch, repeat_steered=True), MonitorAction(
            MonitorMove.STEER, MonitorReason.REPEATED_CALL, text
        )
    return watch, None


def on_output(
    watch: ChildWatch, message_bytes: int, now: float, policy: MonitorPolicy
) -> tuple[ChildWatch, MonitorAction | None]:
    """A streamed piece of an assistant message, ``message_bytes`` of it so far: past the
    bound, the child is stopped (once), before Pi spends minutes on the rest."""
    watch = on_event(watch, now)
    if watch.stopped or message_bytes <= policy.message_bytes:
        return watch, None
    text = (
        f"message too large: one assistant message streamed {message_bytes} bytes (text, "
        f"thinking and tool-call arguments), over the {policy.message_bytes} allowed "
        f"(PI_SQUAD_MAX_MESSAGE_BYTES, default {DEFAULT_MESSAGE_BYTES}); it was stopped"
    )
    return _stop(watch, MonitorReason.MESSAGE_SIZE, text)


def _stop(watch: ChildWatch, reason: MonitorReason, text: str) -> tuple[ChildWatch, MonitorAction]:
    """Stop the child, once: a stopped watch acts no more."""
    return attrs.evolve(watch, stopped=True), MonitorAction(MonitorMove.STOP, reason, text)


def on_tick(
    watch: ChildWatch, now: float, policy: MonitorPolicy
) -> tuple[ChildWatch, MonitorAction | None]:
    """Time passing: the ceiling first, then the idle steer, then the idle escalation."""
    if watch.stopped:
        return watch, None
    if policy.ceiling is not None and now - watch.started_at >= policy.ceiling:
        text = (
            f"runtime ceiling reached: the child ran {now - watch.started_at:.0f} s of the "
            f"{policy.ceiling:.0f} s allowed (PI_SQUAD_CEILING_MS, default "
            f"{DEFAULT_CEILING_SECONDS * 1000:.0f}); it was stopped"
        )
        return _stop(watch, MonitorReason.CEILING, text)
    quiet = now - watch.last_event_at
    if watch.idle_stage < 2 and quiet >= policy.idle_escalate:
        text = (
            f"no event from the child for {quiet:.0f} s, after a steer at {policy.idle_steer:.0f} s"
            ": it may be stuck; check it (pi-squad status), message it, or pause_task it"
        )
        return attrs.evolve(watch, idle_stage=2), MonitorAction(
            MonitorMove.ESCALATE, MonitorReason.IDLE_ESCALATION, text
        )
    if watch.idle_stage < 1 and quiet >= policy.idle_steer:
        text = (
            f"{STEER_PREFIX} Nothing has come from you for {quiet:.0f} s. If you are waiting on "
            "something, say what; otherwise continue with your task or finish with your report."
        )
        return attrs.evolve(watch, idle_stage=1), MonitorAction(
            MonitorMove.STEER, MonitorReason.IDLE, text
        )
    return watch, None


def next_deadline(watch: ChildWatch, policy: MonitorPolicy) -> float | None:
    """The earliest monotonic time at which ``on_tick`` would act if no event came first
    (``None``: it never will), so a driver can sleep until then instead of ticking."""
    if watch.stopped:
        return None
    deadlines: list[float] = []
    if policy.ceiling is not None:
        deadlines.append(watch.started_at + policy.ceiling)
    if watch.idle_stage < 1:
        deadlines.append(watch.last_event_at + policy.idle_steer)
    elif watch.idle_stage < 2:
        deadlines.append(watch.last_event_at + policy.idle_escalate)
    return min(deadlines, default=None)
