"""What a main Pi says of this project's squads when a session starts and ends."""

from __future__ import annotations

import attrs
import pytest

from application.spec_reads import AttestationStatus
from application.squads.session_notices import (
    attention_line,
    lost_work,
    may_need_the_user,
    shutdown_notice,
    startup_notice,
)
from application.squads.status import SquadStatusReport, TaskStatusLine
from domain.squad.model import Actor, Review, ReviewStatus, SquadStatus, TaskStatus
from tests.builders import MOMENT, squad_record


def report(
    status: SquadStatus,
    tasks: tuple[TaskStatus, ...] = (TaskStatus.DONE,),
    *,
    driven: bool | None = True,
    review: ReviewStatus | None = None,
) -> SquadStatusReport:
    squad = squad_record(
        "s1",
        status=status,
        review=None if review is None else Review(status=review, requested_at=MOMENT),
    )
    lines = tuple(
        TaskStatusLine(
            task_id=f"t{n}",
            agent="backend",
            title="",
            status=task_status,
            blocked_by=(),
            attestation=AttestationStatus.NOT_REQUIRED,
            chunks_read=None,
            chunk_count=None,
        )
        for n, task_status in enumerate(tasks)
    )
    return SquadStatusReport(
        squad=squad,
        tasks=lines,
        cost=0.0,
        elapsed_seconds=0.0,
        canonical_problem=None,
        driven=driven,
    )


@pytest.mark.parametrize(
    ("built", "expected"),
    [
        (
            report(SquadStatus.REVIEW, review=ReviewStatus.PENDING),
            "s1: awaiting your review (1/1 done): /squad review s1",
        ),
        (report(SquadStatus.REVIEW, review=ReviewStatus.FAILED), None),
        (
            report(SquadStatus.FAILED, (TaskStatus.FAILED,)),
            "s1: failed (0/1 done): /squad status s1 says why, /squad resume s1 retries",
        ),
        (report(SquadStatus.PAUSED), "s1: paused (1/1 done): /squad resume s1"),
        (
            report(SquadStatus.RUNNING, (TaskStatus.SUSPENDED, TaskStatus.BLOCKED)),
            "s1: 1 task(s) suspended (0/2 done): /squad resume s1",
        ),
        (
            report(SquadStatus.RUNNING, (TaskStatus.PENDING,), driven=False),
            "s1: running, but nothing drives it (0/1 done): /squad resume s1",
        ),
        (report(SquadStatus.RUNNING, (TaskStatus.PENDING,), driven=True), None),
        (report(SquadStatus.DONE), None),
    ],
)
def test_each_squad_that_needs_the_user_gets_one_line_with_its_command(
    built: SquadStatusReport, expected: str | None
) -> None:
    assert attention_line(built) == expected


def test_only_a_running_undriven_squad_with_work_in_progress_lost_its_driver() -> None:
    assert lost_work(report(SquadStatus.RUNNING, (TaskStatus.IN_PROGRESS,), driven=False))
    assert not lost_work(report(SquadStatus.RUNNING, (TaskStatus.IN_PROGRESS,), driven=True))
    assert not lost_work(report(SquadStatus.RUNNING, (TaskStatus.SUSPENDED,), driven=False))
    assert not lost_work(report(SquadStatus.RUNNING, (TaskStatus.IN_PROGRESS,), driven=None))


def test_quiet_sessions_say_nothing() -> None:
    assert startup_notice([report(SquadStatus.DONE)], []) is None
    assert shutdown_notice([]) is None
    notice = shutdown_notice(["a", "b"])
    assert notice is not None
    assert "(a, b)" in notice
    assert "pi-squad modify a resume, then pi-squad run --squad a" in notice


@pytest.mark.parametrize(
    ("built", "expected"),
    [
        (report(SquadStatus.DONE), False),
        (report(SquadStatus.REVIEW, review=ReviewStatus.FAILED), False),
        (report(SquadStatus.REVIEW, review=ReviewStatus.PENDING), True),
        (report(SquadStatus.RUNNING), True),
        (report(SquadStatus.FAILED), True),
        (report(SquadStatus.PAUSED), True),
    ],
)
def test_only_squads_that_may_need_the_user_are_read_in_full_at_session_start(
    built: SquadStatusReport, expected: bool
) -> None:
    assert may_need_the_user(built.squad) is expected
    if not expected:
        assert attention_line(built) is None, "never skipped a squad that needed the user"


@pytest.mark.parametrize("status", [SquadStatus.RUNNING, SquadStatus.FAILED, SquadStatus.PAUSED])
def test_an_attested_flows_squad_never_needs_the_user_at_session_start(
    status: SquadStatus,
) -> None:
    """Its runs are the flow's: a session must not revive or offer it, even with lost work."""
    squad = attrs.evolve(report(status).squad, flow_id="0123456789abcdef")
    assert may_need_the_user(squad) is False
    assert may_need_the_user(attrs.evolve(squad, flow_id=None)) is True


def test_a_cancelled_squad_is_announced_as_cancelled_with_who_and_when() -> None:
    built = report(SquadStatus.FAILED, (TaskStatus.SUSPENDED,))
    squad = attrs.evolve(built.squad, cancelled_at=MOMENT, cancelled_by=Actor.MODEL)
    assert attention_line(attrs.evolve(built, squad=squad)) == (
        f"s1: cancelled by the model (squad_modify) at {MOMENT:%Y-%m-%d %H:%M} UTC (0/1 done): "
        "/squad resume s1 restarts it, /squad dismiss s1 hides it"
    )


def test_a_dismissed_squad_is_not_announced_at_session_start() -> None:
    failed = squad_record("s1", status=SquadStatus.FAILED)
    assert may_need_the_user(failed)
    assert not may_need_the_user(attrs.evolve(failed, dismissed_at=MOMENT))
