"""Issue 31 item 2 on fakes: the main Pi's widget and footer keep every squad of the project that
needs the person in view, each with its state and the ``/squad`` command that moves it on, until
it is accepted or dismissed (a record the squad keeps, so another session hides it too); a
cancel says who cancelled and when; a passed review leaves the view before its answer."""

from __future__ import annotations

from typing import Any

import pytest

from application.main_role import MainRole
from application.ports import SessionNotification, ToolFailure
from application.squads.operations import Action
from domain.squad.model import Actor, SquadStatus
from tests.integration.main_role.support import RecordingDrive, main_role_over, ui_events
from tests.integration.ops_support import (
    EVIDENCE,
    operations,
    run_to_review,
    squad_status,
    status_reader,
)
from tests.integration.scheduler_steps import failed_squad, started
from tests.runtime_world import RuntimeWorld


def shown(emitted: list[SessionNotification]) -> tuple[str | None, list[str] | None]:
    """The footer item and widget lines drawn last."""
    status: str | None = None
    widget: list[str] | None = None
    for event in ui_events(emitted):
        if event["method"] == "setStatus":
            status = event["text"]
        elif event["method"] == "setWidget":
            widget = event["lines"]
    return status, widget


def attached(role: MainRole) -> list[SessionNotification]:
    emitted: list[SessionNotification] = []
    role.attach(emitted.append)
    return emitted


def widget_on_attach(role: MainRole, footer: str) -> list[str]:
    """The widget lines drawn when a session attaches, once its footer item reads ``footer``."""
    status, widget = shown(attached(role))
    assert status == footer
    assert widget is not None
    return widget


def cancel_words(world: RuntimeWorld, by: str) -> str:
    at = world.store.snapshot(world.squad_id).squad.cancelled_at
    assert at is not None
    return f"cancelled by {by} at {at:%Y-%m-%d %H:%M} UTC"


def test_a_paused_squad_stays_in_view_with_the_command_that_resumes_it(
    role: MainRole, world: RuntimeWorld
) -> None:
    sid = world.squad_id
    role.command("squad", f"resume {sid}")
    emitted = attached(role)
    role.command("squad", f"pause {sid}")
    status, widget = shown(emitted)
    assert status == f"squad {sid}: paused 0/4"
    assert widget == [
        f"squad {sid} · paused · 0/4 tasks done",
        f"  next: /squad resume {sid} · /squad dismiss {sid} hides it",
    ]


def test_a_squad_the_person_cancels_is_shown_cancelled_with_who_and_when(
    role: MainRole, world: RuntimeWorld
) -> None:
    sid = world.squad_id
    emitted = attached(role)
    role.command("squad", f"cancel {sid}")
    assert squad_status(world) is SquadStatus.FAILED, "the record keeps upstream's status"
    words = cancel_words(world, "you (/squad cancel)")
    status, widget = shown(emitted)
    assert status == f"squad {sid}: cancelled 0/4"
    assert widget == [
        f"squad {sid} · {words} · 0/4 tasks done",
        f"  next: /squad resume {sid} restarts it · /squad dismiss {sid} hides it",
    ]
    text = status_reader(world).status(sid).text()  # what `pi-squad status` prints
    assert f"Status: {words}" in text.splitlines()
    assert "failed" not in text
    assert status_reader(world).status(sid).document()["cancelled"]["by"] == "person"


@pytest.mark.parametrize(
    ("by", "words"),
    [(Actor.MODEL, "the model (squad_modify)"), (Actor.TERMINAL, "a terminal (pi-squad modify)")],
)
def test_a_cancel_names_the_model_or_a_terminal_when_they_asked(
    world: RuntimeWorld, by: Actor, words: str
) -> None:
    operations(world).apply(world.squad_id, Action.CANCEL, by=by)
    text = status_reader(world).status(world.squad_id).text()
    assert f"Status: {cancel_words(world, words)}" in text.splitlines()


def test_the_model_s_cancel_through_its_tool_is_recorded_as_the_model_s(
    role: MainRole, world: RuntimeWorld
) -> None:
    role.execute_tool("call-1", "squad_modify", {"action": "cancel", "squadId": world.squad_id})
    assert world.store.snapshot(world.squad_id).squad.cancelled_by is Actor.MODEL


def test_a_failed_squad_stays_in_view_with_why_and_how_to_retry(
    role: MainRole, world: RuntimeWorld
) -> None:
    sid = world.squad_id
    failed_squad(world)
    widget = widget_on_attach(role, f"squad {sid}: failed 0/4")
    assert widget[-1] == (
        f"  next: /squad status {sid} says why · /squad resume {sid} retries · "
        f"/squad dismiss {sid} hides it"
    )


def test_a_squad_suspended_when_pi_left_is_shown_at_the_next_start(
    role: MainRole, world: RuntimeWorld
) -> None:
    sid = world.squad_id
    started(world).stop()  # Pi left: its driver suspended the running task
    widget = widget_on_attach(role, f"squad {sid}: running 0/4")
    assert widget[0].startswith(f"squad {sid} · running · 1 suspended · 0/4 tasks done")
    assert widget[1] == f"  next: /squad resume {sid} drives it · /squad cancel {sid} stops it"
    assert any("design (architect) suspended" in line for line in widget)


def test_a_dismissed_squad_leaves_the_view_of_every_session_until_resumed(
    role: MainRole, world: RuntimeWorld
) -> None:
    sid = world.squad_id
    role.command("squad", f"cancel {sid}")
    emitted = attached(role)
    answer = role.command("squad", f"dismiss {sid[:8]}")
    assert answer.notify == (
        f"Squad '{sid}' (cancelled) dismissed from the widget; /squad resume {sid} brings it "
        "back to work and into view."
    )
    assert shown(emitted) == (None, None)
    assert world.store.snapshot(sid).squad.dismissed_at is not None, "kept in the squad's record"
    with main_role_over(world, RecordingDrive()) as another_session:
        assert another_session.shown_reports() == []
    role.command("squad", f"resume {sid}")
    status, _ = shown(emitted)
    assert status == f"squad {sid}: running 0/4"


def test_a_running_squad_cannot_be_dismissed_and_dismiss_needs_an_id(
    role: MainRole, world: RuntimeWorld
) -> None:
    sid = world.squad_id
    running = f"OPERATION_REFUSED: dismiss refused: squad '{sid}' is running; stop it first"
    for args, words in (
        (f"dismiss {sid}", running),
        ("dismiss", "/squad dismiss needs a squad id (a unique prefix will do)"),
    ):
        with pytest.raises(ToolFailure) as refused:
            role.command("squad", args)
        assert refused.value.message.startswith(words)
    assert world.store.snapshot(sid).squad.dismissed_at is None


def test_a_squad_awaiting_review_says_so_and_names_the_review_command(
    role: MainRole, world: RuntimeWorld
) -> None:
    sid = world.squad_id
    run_to_review(world)
    widget = widget_on_attach(role, f"squad {sid}: review 4/4 · review needed")
    assert widget[:2] == [
        f"squad {sid} · review needed · 4/4 tasks done · $0.0040",
        f"  next: /squad review {sid} reviews it · /squad dismiss {sid} hides it",
    ]


def review_call(squad_id: str) -> dict[str, Any]:
    return {
        "squadId": squad_id,
        "verdict": "pass",
        "contractChecks": EVIDENCE["contract_checks"],
        "diffReview": EVIDENCE["diff_review"],
        "verificationEvidence": EVIDENCE["verification_evidence"],
        "integrationEvidence": EVIDENCE["integration_evidence"],
    }


def test_a_passed_review_leaves_the_view_before_the_review_tool_answers(
    role: MainRole, world: RuntimeWorld
) -> None:
    run_to_review(world)
    emitted = attached(role)
    assert shown(emitted)[0] is not None
    result = role.execute_tool("call-2", "squad_review", review_call(world.squad_id))
    assert "accepted as done" in result.texts[0]
    # This role has no poller (interval 0): only the write itself can have redrawn the view.
    assert shown(emitted) == (None, None), "no stale 'review needed' after a passed review"
