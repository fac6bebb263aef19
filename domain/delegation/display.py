"""What a person sees of a delegation session in Pi (docs/delegation.md, "In Pi"): the live row
of its jobs, the notice when a job settles, and one line per job shared by the row, the
``/delegate status`` card and the ``delegate`` tool's transcript entry.

The row shows a job while it is queued or running, while its result waits for the parent
(ready, incomplete, invalid: the parent can collect, follow up or resolve it), and for
``LINGER_MS`` after it settled any other way, so a failure stays on screen with its reason
long enough to be read; with nothing of that kind left the row is removed. A notice is due
when a job's current attempt is seen settled that was last seen working (or not seen at all):
a host retry's failed attempt is never announced, its retry is the job's current attempt.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

import attrs

from domain.delegation.lifecycle import ACTIVE, State
from domain.delegation.session import Job, SessionState
from domain.delegation.views import settled_reason

STATUS_KEY: Final = "pi-squad-delegate"
WIDGET_KEY: Final = "pi-squad-delegate"
LINGER_MS: Final = 60_000
# A reason longer than this is cut on the row and in notices; ``/delegate status`` and the
# tool's JSON keep it whole.
REASON_CHARS: Final = 160
# The parent has something to do with these: collect, follow up, accept or discard.
AWAITING: Final = frozenset({State.READY, State.INCOMPLETE, State.INVALID})
_MARKS: Final[dict[str, str]] = {
    State.QUEUED: "…",
    State.RUNNING: "▸",
    State.READY: "✓",
    State.ACCEPTED: "✓",
    State.INCOMPLETE: "◐",
    State.STALE: "~",
    State.DISCARDED: "–",
}
# The status item counts states in the lifecycle's order (queued, running, ready, ...).
_ORDER: Final = tuple(State)
COLLECT_NEXT: Final = "next: /delegate collect to read it; the model resolves it (delegate resolve)"
REPAIR_NEXT: Final = (
    "next: /delegate collect to see why; the model may follow up (delegate follow_up) or "
    "discard it (delegate resolve)"
)
STATUS_NEXT: Final = "next: /delegate status for every job and its reason"
_NEXT: Final = {
    State.READY: COLLECT_NEXT,
    State.INCOMPLETE: REPAIR_NEXT,
    State.INVALID: REPAIR_NEXT,
}
_LEVELS: Final = {State.READY: "info", State.INCOMPLETE: "warning", State.CANCELLED: "warning"}


def clipped(text: str, limit: int = REASON_CHARS) -> str:
    """``text`` on one line, at most ``limit`` characters (an ellipsis marks a cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def mark(state: str) -> str:
    """The line's first character: ✓ a usable result, ✗ an end without one (drawn in colour
    by the shim's entry renderer)."""
    return _MARKS.get(state, "✗")


@attrs.frozen
class JobFacts:
    """What a line says of one job: a status row's fields (``views.job_row``)."""

    key: str
    mode: str
    state: str
    reason: str | None
    covered: int | None
    required: int

    @classmethod
    def of(cls, job: Job) -> JobFacts:
        attempt = job.current
        result = attempt.result
        covered = (
            None
            if result is None
            else sum(item["state"] != "uncovered" for item in result["coverage"])
        )
        return cls(
            job.key,
            job.mode,
            str(attempt.state),
            settled_reason(attempt),
            covered,
            len(job.requirement_ids),
        )


def outcome_text(facts: JobFacts, limit: int | None = None) -> str:
    """A job's state as a person reads it: ``running``, ``ready · 1/1 covered``,
    ``failed: <reason>`` (the reason cut to ``limit`` characters when one is given)."""
    text = facts.state
    if facts.covered is not None:
        text += f" · {facts.covered}/{facts.required} covered"
    if facts.reason:
        text += f": {facts.reason if limit is None else clipped(facts.reason, limit)}"
    return text


def job_line(facts: JobFacts, limit: int | None = None) -> str:
    """``✓ k1 (review) ready · 1/1 covered``: one job, the same words everywhere it is shown."""
    return f"{mark(facts.state)} {facts.key} ({facts.mode}) {outcome_text(facts, limit)}"


def shown(job: Job, now_ms: int) -> bool:
    """Whether the row still shows ``job`` at ``now_ms`` (the module's rule)."""
    attempt = job.current
    if attempt.state in ACTIVE or (attempt.state in AWAITING and attempt.disposition is None):
        return True
    settled = attempt.settled_at_ms
    return settled is not None and now_ms - settled < LINGER_MS


def _shown_jobs(state: SessionState | None, now_ms: int) -> Iterator[Job]:
    for batch in () if state is None else state.batches.values():
        yield from (job for job in batch.jobs if shown(job, now_ms))


@attrs.frozen
class DelegationRow:
    """What the row draws: the status item's text and the widget's lines (``None``: cleared)."""

    status: str | None
    widget: tuple[str, ...] | None


NOTHING_SHOWN: Final = DelegationRow(status=None, widget=None)


def delegation_row(state: SessionState | None, now_ms: int) -> DelegationRow:
    """The row for the session as it is at ``now_ms``: counts by state on the status item, one
    line per shown job in the widget, or nothing at all."""
    jobs = list(_shown_jobs(state, now_ms))
    if not jobs:
        return NOTHING_SHOWN
    counts: dict[str, int] = {}
    for job in jobs:
        counts[str(job.current.state)] = counts.get(str(job.current.state), 0) + 1
    ordered = sorted(counts, key=lambda s: _ORDER.index(State(s)))
    status = "delegate: " + " · ".join(f"{counts[s]} {s}" for s in ordered)
    return DelegationRow(
        status=status, widget=tuple(job_line(JobFacts.of(job), REASON_CHARS) for job in jobs)
    )


@attrs.frozen
class SettledNotice:
    """A notification that a job settled: its text and level (info, warning or error)."""

    text: str
    level: str


def settle_notice(job: Job) -> SettledNotice:
    """``job`` just settled: its name, outcome and the command to type next."""
    attempt = job.current
    outcome = outcome_text(JobFacts.of(job), REASON_CHARS)
    text = f"delegate: job {job.key} ({job.job_id}) {outcome} — "
    text += _NEXT.get(attempt.state, STATUS_NEXT)
    return SettledNotice(text, _LEVELS.get(attempt.state, "error"))


def _working(state: SessionState) -> dict[str, tuple[str, bool]]:
    """Each job's current attempt and whether it is still working."""
    return {
        job.job_id: (job.current.attempt_id, job.current.state in ACTIVE)
        for batch in state.batches.values()
        for job in batch.jobs
    }


def settled_since(before: SessionState | None, after: SessionState) -> list[SettledNotice]:
    """One notice per job that settled between ``before`` and ``after``: its current attempt
    is settled now and was working, or was not yet the job's current attempt, in ``before``
    (a job new since then counts as working before)."""
    earlier = {} if before is None else _working(before)
    notices = []
    for batch in after.batches.values():
        for job in batch.jobs:
            attempt = job.current
            if attempt.state in ACTIVE or attempt.state in (State.PROPOSED, State.REJECTED):
                continue
            seen = earlier.get(job.job_id)
            if seen is None or seen[0] != attempt.attempt_id or seen[1]:
                notices.append(settle_notice(job))
    return notices
