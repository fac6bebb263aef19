"""Issue 31 item 5 on fakes: ``/squad`` resolves a cancel's id prefix as its other subcommands
do, says a done squad is done when asked to resume it, and names ``/squad`` commands (never
terminal flags) as the next steps inside Pi."""

from __future__ import annotations

import pytest

from application.main_role import MainRole
from application.ports import ToolFailure
from application.squads.operations import Action
from domain.squad.model import SquadStatus, Verdict
from tests.builders import squad_record, task_record
from tests.integration.main_role.support import RecordingDrive
from tests.integration.ops_support import (
    EVIDENCE,
    fail_task,
    operations,
    publish_legacy,
    recorder,
    run_to_review,
    squad_status,
)
from tests.runtime_world import RuntimeWorld


def test_cancel_takes_a_unique_prefix_of_the_squad_id(role: MainRole, world: RuntimeWorld) -> None:
    answer = role.command("squad", f"cancel {world.squad_id[:8]}")
    assert answer.notify == f"Squad '{world.squad_id}' cancelled (0 running task(s) suspended)."
    assert squad_status(world) is SquadStatus.FAILED


def test_cancel_refuses_a_prefix_several_squads_start_with(
    role: MainRole, world: RuntimeWorld
) -> None:
    other = publish_legacy(world, f"{world.squad_id[:6]}-other")
    with pytest.raises(ToolFailure) as refused:
        role.command("squad", f"cancel {world.squad_id[:6]}")
    assert refused.value.message.startswith("SQUAD_AMBIGUOUS: ")
    assert world.squad_id in refused.value.message
    assert other in refused.value.message
    assert squad_status(world) is SquadStatus.RUNNING, "nothing was cancelled"


def test_cancel_without_an_id_changes_nothing(role: MainRole, world: RuntimeWorld) -> None:
    with pytest.raises(ToolFailure) as refused:
        role.command("squad", "cancel")
    assert "needs a squad id (a unique prefix will do)" in refused.value.message
    assert squad_status(world) is SquadStatus.RUNNING


def test_resume_of_a_done_squad_says_it_is_done_and_drives_nothing(
    role: MainRole, world: RuntimeWorld, drive: RecordingDrive
) -> None:
    run_to_review(world)
    recorder(world).record_review(world.squad_id, Verdict.PASS, **EVIDENCE)
    answer = role.command("squad", f"resume {world.squad_id}")
    assert answer.notify is not None
    assert "This session drives it" not in answer.notify
    assert answer.notify.startswith(f"Squad {world.squad_id} is done and accepted: nothing to ")
    assert f"/squad report {world.squad_id}" in answer.notify
    assert drive.driven == []
    assert squad_status(world) is SquadStatus.DONE


def test_resume_of_a_squad_awaiting_review_points_at_the_review(
    role: MainRole, world: RuntimeWorld, drive: RecordingDrive
) -> None:
    run_to_review(world)
    answer = role.command("squad", "resume")
    assert answer.notify is not None
    assert "This session drives it" not in answer.notify
    assert answer.notify.endswith(f"it awaits review (/squad review {world.squad_id}).")
    assert drive.driven == []


def status_card(role: MainRole) -> str:
    message = role.command("squad", "status").message
    assert message is not None
    text: str = message["content"]
    assert "pi-squad " not in text
    assert "--squad" not in text
    return text


def test_the_status_card_of_an_undriven_squad_names_squad_resume(
    role: MainRole, world: RuntimeWorld
) -> None:
    operations(world).apply(world.squad_id, Action.PAUSE_TASK, task_id="design")
    assert f"continue it with: /squad resume {world.squad_id}" in status_card(role)


def test_the_status_card_of_a_failed_task_names_squad_report(
    role: MainRole, world: RuntimeWorld
) -> None:
    scheduler = world.scheduler()
    scheduler.reconcile()
    fail_task(world, scheduler, "design")
    assert f"(full text: /squad report {world.squad_id})" in status_card(role)


def test_tab_completes_the_subcommands_then_this_projects_squad_ids(
    role: MainRole, world: RuntimeWorld
) -> None:
    assert role.completions("squad", "") == (
        "status", "watch", "inspect", "resume", "pause", "cancel", "dismiss", "report", "review",
    )  # fmt: skip
    assert role.completions("squad", "re") == ("resume", "report", "review")
    assert role.completions("squad", "status ") == (f"status {world.squad_id}",)
    assert role.completions("squad", f"cancel {world.squad_id[:4]}") == (
        f"cancel {world.squad_id}",
    )
    assert role.completions("squad", "status") == (), "typed whole: Enter runs it"
    assert role.completions("squad", f"status {world.squad_id}") == ()
    assert role.completions("squad", "status zz") == ()
    assert role.completions("squad", "status a b") == ()
    assert role.completions("squad", "frobnicate ") == ()
    assert role.completions("flows", "") == ()


def test_tab_offers_only_this_projects_squads_newest_first(
    role: MainRole, world: RuntimeWorld
) -> None:
    older = publish_legacy(world, "ship-older")  # this project's, created before the file squad
    elsewhere = squad_record("ship-elsewhere", cwd="/elsewhere", task_ids=("api",))
    world.seed_squad(elsewhere, [task_record("api")])
    assert role.completions("squad", "status ship") == (
        f"status {world.squad_id}",
        f"status {older}",
    )
