"""What a main Pi says when a session starts and when it ends: which squads of this project
need the user (and the ``/squad`` command for each), what the model is told of this project's
squads before each prompt, and what leaving does to the squads this session drives. Ids, counts
and commands only; never a spec field."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from application.ports import Store
from application.squads.documents import status_words
from application.squads.scheduler import Notice
from application.squads.status import SquadStatusReader, SquadStatusReport, review_gate_text
from domain.squad.model import CANCELLED, ReviewStatus, Squad, SquadStatus, TaskStatus


def awaiting_review(squad: Squad) -> bool:
    return (
        squad.status is SquadStatus.REVIEW
        and squad.review is not None
        and squad.review.status is ReviewStatus.PENDING
    )


def may_need_the_user(squad: Squad) -> bool:
    """Judged on the record alone, before a status read: a done squad, or one whose review was
    recorded, never appears in :func:`startup_notice` (nor is it revived or re-announced); nor
    does an attested flow's squad, whose runs are the flow's (``application.squads.drive``), nor
    one the person dismissed (``/squad dismiss``)."""
    if squad.status is SquadStatus.DONE or squad.flow_id is not None:
        return False
    if squad.dismissed_at is not None:
        return False
    return squad.status is not SquadStatus.REVIEW or awaiting_review(squad)


def untold_review(report: SquadStatusReport) -> bool:
    """Awaiting review, and no session was told (``review.notifiedAt`` unset)."""
    review = report.squad.review
    return awaiting_review(report.squad) and review is not None and review.notified_at is None


def attention_line(report: SquadStatusReport) -> str | None:
    """Why this squad needs the user, with the command that moves it on; ``None``: it does
    not."""
    squad = report.squad
    squad_id = squad.id
    suspended = sum(1 for t in report.tasks if t.status is TaskStatus.SUSPENDED)
    progress = f"{report.done}/{report.total} done"
    if squad.status is SquadStatus.REVIEW:
        if squad.review is not None and squad.review.status is ReviewStatus.PENDING:
            return f"{squad_id}: awaiting your review ({progress}): /squad review {squad_id}"
        return None
    if squad.status_word == CANCELLED:
        return (
            f"{squad_id}: {status_words(squad)} ({progress}): /squad resume {squad_id} restarts "
            f"it, /squad dismiss {squad_id} hides it"
        )
    if squad.status is SquadStatus.FAILED:
        return (
            f"{squad_id}: failed ({progress}): /squad status {squad_id} says why, "
            f"/squad resume {squad_id} retries"
        )
    if squad.status is SquadStatus.PAUSED:
        return f"{squad_id}: paused ({progress}): /squad resume {squad_id}"
    if squad.status is SquadStatus.RUNNING and suspended:
        return f"{squad_id}: {suspended} task(s) suspended ({progress}): /squad resume {squad_id}"
    if report.undriven:
        return f"{squad_id}: running, but nothing drives it ({progress}): /squad resume {squad_id}"
    return None


def startup_notice(
    reports: Sequence[SquadStatusReport],
    revived: Sequence[str],
    elsewhere: Sequence[SquadStatusReport] = (),
) -> str | None:
    """The squads of this project that need the user, those this session drives again, and
    those whose driver died in another session (``elsewhere``: that session owns them, so this
    one takes them over only when told to)."""
    lines = [line for line in map(attention_line, reports) if line is not None]
    lines += [
        f"{squad_id}: its driver died mid-run; this session drives it again" for squad_id in revived
    ]
    lines += [
        f"{r.squad.id}: its driver died mid-run in another Pi session ({r.done}/{r.total} done); "
        f"to take it over: /squad resume {r.squad.id} (or from a terminal: pi-squad run --squad "
        f"{r.squad.id})"
        for r in elsewhere
    ]
    if not lines:
        return None
    return "pi-squad: squads of this project need you:\n" + "\n".join(f"- {x}" for x in lines)


def lost_work(report: SquadStatusReport) -> bool:
    """Running, undriven, with tasks still marked in progress: a driver died mid-run (a crash,
    not a pause or an orderly exit, which suspend them). Its next driver resumes that work on the
    same sessions, as any restart does; suspended tasks stay suspended."""
    return report.undriven and any(t.status is TaskStatus.IN_PROGRESS for t in report.tasks)


def shutdown_notice(driven: Sequence[str]) -> str | None:
    """What leaving does to the squads this session drives, and how to pick them up again."""
    if not driven:
        return None
    names = ", ".join(driven)
    first = driven[0]
    return (
        f"pi-squad: leaving stops the squad(s) this session drives ({names}). Their running "
        "tasks are suspended on their sessions; the chunks they read are kept. Resume with "
        f"/squad resume {first} in Pi, or from a terminal: pi-squad modify {first} resume, then "
        f"pi-squad run --squad {first}."
    )


def notice_payload(notice: Notice) -> dict[str, Any]:
    return {
        "message": {
            "customType": "squad-" + notice.kind.removeprefix("squad_").replace("_", "-"),
            "content": notice.text,
            "display": True,
            "details": {"squadId": notice.squad_id, "taskId": notice.task_id},
        },
        "options": {"deliverAs": "followUp", "triggerTurn": True},
    }


def agent_start_context(
    store: Store, status: SquadStatusReader, cwd: str, driven: Collection[str]
) -> str | None:
    """Before each prompt: each of this project's review gates still pending, and a one-line
    state of each squad this session drives (so the model waits for its report, not polls)."""
    sections: list[str] = []
    for record in store.list_squads():
        if record.cwd != cwd:
            continue  # judged on the record: another project's tasks are never read
        squad_id = record.id
        snapshot = store.snapshot(squad_id)
        squad = snapshot.squad
        if squad.status is SquadStatus.REVIEW and squad.review is not None:
            if squad.review.status is ReviewStatus.PENDING:
                sections.append(review_gate_text(status.status(squad_id)))
        elif squad_id in driven:
            done = sum(1 for t in snapshot.tasks.values() if t.status is TaskStatus.DONE)
            sections.append(
                f"<squad_status>Squad {squad_id} is {squad.status}: {done}/"
                f"{len(snapshot.tasks)} tasks done. It runs in the background and reports "
                "back; do not poll it.</squad_status>"
            )
    return "\n\n".join(sections) or None
