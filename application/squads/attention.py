"""Which squads of a project the main Pi keeps in view, and for each the ``/squad`` command that
moves it on: every squad that needs the person (running, paused, awaiting review, suspended,
failed or cancelled) stays in the widget and footer until it is accepted (done) or the person
dismisses it (``/squad dismiss``, kept in the squad's own record as ``dismissedAt``, so another
Pi session of the project hides it too)."""

from __future__ import annotations

from application.squads.documents import status_words
from application.squads.status import SquadStatusReport
from domain.squad.model import CANCELLED, ReviewStatus, Squad, SquadStatus, TaskStatus


def in_view(squad: Squad) -> bool:
    """Judged on the record alone (before the costlier status read). An attested flow's squad
    is its flow's, shown in the flow's row."""
    return (
        squad.status is not SquadStatus.DONE
        and squad.dismissed_at is None
        and squad.flow_id is None
    )


def state_text(report: SquadStatusReport) -> str:
    """The squad's state as the widget says it: ``review needed``, ``cancelled by you
    (/squad cancel) at ...``, ``running · 2 suspended``..."""
    squad = report.squad
    if squad.status is SquadStatus.REVIEW and squad.review is not None:
        pending = squad.review.status is ReviewStatus.PENDING
        return "review needed" if pending else f"review {squad.review.status}"
    suspended = sum(1 for t in report.tasks if t.status is TaskStatus.SUSPENDED)
    if squad.status is SquadStatus.RUNNING and suspended:
        return f"running · {suspended} suspended"
    return status_words(squad)


def next_steps(report: SquadStatusReport) -> str:
    """The ``/squad`` commands that move the squad on, as the widget shows them; a squad that
    is not running can also be dismissed."""
    squad = report.squad
    sid = squad.id
    suspended = any(t.status is TaskStatus.SUSPENDED for t in report.tasks)
    if squad.status is SquadStatus.RUNNING:
        if report.undriven or suspended:
            return f"/squad resume {sid} drives it · /squad cancel {sid} stops it"
        return f"/squad pause {sid} or /squad cancel {sid} stops it"
    dismiss = f"/squad dismiss {sid} hides it"
    if squad.status is SquadStatus.REVIEW:
        pending = squad.review is not None and squad.review.status is ReviewStatus.PENDING
        if pending:
            return f"/squad review {sid} reviews it · {dismiss}"
        return f"/squad status {sid} says what to rework · {dismiss}"
    if squad.status_word == CANCELLED:
        return f"/squad resume {sid} restarts it · {dismiss}"
    if squad.status is SquadStatus.FAILED:
        return f"/squad status {sid} says why · /squad resume {sid} retries · {dismiss}"
    return f"/squad resume {sid} · {dismiss}"
