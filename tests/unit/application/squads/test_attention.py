"""Which squads the main Pi keeps in view, and the ``/squad`` command each one shows
(``application/squads/attention.py``), over every squad state."""

from __future__ import annotations

import attrs
import pytest

from application.squads.attention import in_view, next_steps, state_text
from application.squads.status import SquadStatusReport
from domain.squad.model import ReviewStatus, Squad, SquadStatus, TaskStatus
from tests.builders import MOMENT, squad_record
from tests.unit.application.squads.test_session_notices import report

HIDE = "/squad dismiss s1 hides it"


@pytest.mark.parametrize(
    ("built", "state", "steps"),
    [
        (
            report(SquadStatus.RUNNING, (TaskStatus.IN_PROGRESS,)),
            "running",
            "/squad pause s1 or /squad cancel s1 stops it",
        ),
        (
            report(SquadStatus.RUNNING, (TaskStatus.SUSPENDED, TaskStatus.SUSPENDED)),
            "running · 2 suspended",
            "/squad resume s1 drives it · /squad cancel s1 stops it",
        ),
        (
            report(SquadStatus.RUNNING, (TaskStatus.PENDING,), driven=False),
            "running",
            "/squad resume s1 drives it · /squad cancel s1 stops it",
        ),
        (report(SquadStatus.PAUSED), "paused", f"/squad resume s1 · {HIDE}"),
        (
            report(SquadStatus.REVIEW, review=ReviewStatus.PENDING),
            "review needed",
            f"/squad review s1 reviews it · {HIDE}",
        ),
        (
            report(SquadStatus.REVIEW, review=ReviewStatus.FAILED),
            "review failed",
            f"/squad status s1 says what to rework · {HIDE}",
        ),
        (
            report(SquadStatus.FAILED, (TaskStatus.FAILED,)),
            "failed",
            f"/squad status s1 says why · /squad resume s1 retries · {HIDE}",
        ),
    ],
)
def test_each_state_shows_the_command_that_moves_the_squad_on(
    built: SquadStatusReport, state: str, steps: str
) -> None:
    assert state_text(built) == state
    assert next_steps(built) == steps


def test_a_cancelled_squad_says_cancelled_and_how_to_restart_it() -> None:
    built = report(SquadStatus.FAILED, (TaskStatus.SUSPENDED,))
    cancelled = attrs.evolve(built, squad=attrs.evolve(built.squad, cancelled_at=MOMENT))
    assert state_text(cancelled) == f"cancelled at {MOMENT:%Y-%m-%d %H:%M} UTC"
    assert next_steps(cancelled) == f"/squad resume s1 restarts it · {HIDE}"


@pytest.mark.parametrize(
    ("squad", "shown"),
    [
        (squad_record("s1", status=SquadStatus.RUNNING), True),
        (squad_record("s1", status=SquadStatus.PAUSED), True),
        (squad_record("s1", status=SquadStatus.FAILED, cancelled_at=MOMENT), True),
        (squad_record("s1", status=SquadStatus.DONE), False),
        (squad_record("s1", status=SquadStatus.FAILED, dismissed_at=MOMENT), False),
        (squad_record("s1", flow_id="f1"), False),
    ],
)
def test_a_squad_stays_in_view_until_accepted_or_dismissed(squad: Squad, shown: bool) -> None:
    assert in_view(squad) is shown
