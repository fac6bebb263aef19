"""Issue 31 item 3 on fakes: what each running child is doing, in the widget (its current tool
or latest line, its elapsed time) and in the inspect overlay's pages (``/squad inspect``,
``/squad watch``), from a scheduler world whose running child's current tool is known."""

from __future__ import annotations

import re
from typing import Any

import pytest

from adapters.bridge.protocol import command_answer_payload
from application.main_role import MainRole
from application.ports import SessionNotification, ToolFailure
from application.squads.scheduler import Scheduler
from domain.squad.model import SquadStatus, Verdict
from tests.fakes.child_runtime import FakeChild
from tests.integration.main_role.support import ui_events
from tests.integration.ops_support import (
    EVIDENCE,
    mailbox,
    recorder,
    run_to_review,
    squad_status,
)
from tests.integration.scheduler_steps import started
from tests.runtime_world import RuntimeWorld


def running_design(world: RuntimeWorld) -> tuple[Scheduler, FakeChild]:
    """The world's first task, design, running for 65 s; its child last started ``bash``."""
    scheduler = started(world)
    child = world.runtime.latest("design")
    child.use_tool("bash")
    scheduler.pump()
    world.clock.advance(65)
    return scheduler, child


def attached(role: MainRole) -> None:
    """The role attached to a session whose notifications are not looked at."""
    ignored: list[SessionNotification] = []
    role.attach(ignored.append)


def widget_of(emitted: list[SessionNotification]) -> list[str]:
    widgets = [e for e in ui_events(emitted) if e["method"] == "setWidget"]
    lines: list[str] = widgets[-1]["lines"]
    return lines


def design_line(role: MainRole, emitted: list[SessionNotification]) -> str:
    role.expand_view(False)  # redraws now
    return next(line for line in widget_of(emitted) if " design (architect) " in line)


def inspect_of(role: MainRole, args: str = "inspect") -> dict[str, Any]:
    answer = role.command("squad", args)
    assert answer.ui is not None
    assert answer.notify is None
    assert command_answer_payload(answer)["ui"] == answer.ui, "the shim draws it as written"
    instruction: dict[str, Any] = dict(answer.ui)
    assert instruction["method"] == "inspect"
    return instruction


def selected_page(instruction: dict[str, Any]) -> dict[str, Any]:
    page: dict[str, Any] = instruction["pages"][instruction["selected"]]
    return page


def test_the_widget_shows_a_running_childs_current_tool_and_elapsed_time(
    role: MainRole, world: RuntimeWorld
) -> None:
    running_design(world)
    emitted: list[SessionNotification] = []
    role.attach(emitted.append)  # its driver died mid-run: this session drives and shows it
    line = design_line(role, emitted)
    assert " in_progress " in line
    assert line.endswith(" · tool bash · 1m 5s")


def test_the_widget_shows_a_childs_latest_line_redacted_once_it_speaks(
    role: MainRole, world: RuntimeWorld
) -> None:
    scheduler, child = running_design(world)
    child.say("Checking the config\nsecond line")
    scheduler.pump()
    emitted: list[SessionNotification] = []
    role.attach(emitted.append)
    assert " · Checking the config · 1m 5s" in design_line(role, emitted)
    child.say("using token = hunter2secret now")
    scheduler.pump()
    line = design_line(role, emitted)
    assert "token = [REDACTED:secret] now" in line
    assert "hunter2secret" not in line, "a child's text is content: redacted as the flow row is"


def test_a_task_that_does_not_run_shows_no_activity(role: MainRole, world: RuntimeWorld) -> None:
    running_design(world)
    emitted: list[SessionNotification] = []
    role.attach(emitted.append)
    role.expand_view(False)
    build = next(line for line in widget_of(emitted) if " build (backend) " in line)
    assert " · tool " not in build
    assert re.search(r" · \d+s$", build) is None, build


def test_inspect_opens_on_the_running_child_with_its_activity_read_mailbox_and_reason(
    role: MainRole, world: RuntimeWorld
) -> None:
    running_design(world)
    mailbox(world).send(world.squad_id, "design", "How far along?", expects_reply=True)
    attached(role)
    page = selected_page(inspect_of(role))
    assert page["taskId"] == "design"
    assert page["running"] is True
    assert page["title"] == (f"squad {world.squad_id} · ⏳ design (architect) in_progress · 1m 5s")
    lines = page["lines"]
    assert lines[0] == "now: tool bash"
    assert lines[1].startswith("read: attestation ")
    assert lines[2] == "reason: none (nothing stopped it)"
    assert lines[3].startswith("mailbox: 1 · ")
    assert lines[4].startswith("  orchestrator (")
    assert lines[4].endswith("): How far along?")
    assert lines[5] == "recent activity:"
    assert lines[-1].endswith(" tool bash")


def test_inspect_pages_every_task_of_the_squads_in_view_and_selects_the_one_named(
    role: MainRole, world: RuntimeWorld
) -> None:
    running_design(world)
    attached(role)
    instruction = inspect_of(role, "inspect bui")
    assert [p["taskId"] for p in instruction["pages"]] == ["build", "design", "docs", "qa"]
    page = selected_page(instruction)
    assert page["taskId"] == "build"
    assert page["lines"][0] == "now: no child runs"
    assert page["lines"][-1] == "recent activity: none yet"


def test_inspect_refuses_a_task_not_in_view_naming_the_tasks_that_are(
    role: MainRole, world: RuntimeWorld
) -> None:
    running_design(world)
    attached(role)
    with pytest.raises(ToolFailure) as refused:
        role.command("squad", "inspect nope")
    assert "no task of the squads in view has that id" in refused.value.message
    assert "build, design, docs, qa" in refused.value.message


def test_inspect_with_nothing_in_view_says_so(role: MainRole, world: RuntimeWorld) -> None:
    run_to_review(world)
    recorder(world).record_review(world.squad_id, Verdict.PASS, **EVIDENCE)
    with pytest.raises(ToolFailure) as refused:
        role.command("squad", "inspect")
    assert "nothing to inspect" in refused.value.message


def test_watch_on_a_running_squad_opens_the_inspect_view_not_a_copy_of_the_widget(
    role: MainRole, world: RuntimeWorld
) -> None:
    running_design(world)
    attached(role)
    instruction = inspect_of(role, f"watch {world.squad_id}")
    assert selected_page(instruction)["lines"][0] == "now: tool bash"


def test_watch_on_a_finished_squad_promises_no_widget(role: MainRole, world: RuntimeWorld) -> None:
    run_to_review(world)
    recorder(world).record_review(world.squad_id, Verdict.PASS, **EVIDENCE)
    assert squad_status(world) is SquadStatus.DONE
    answer = role.command("squad", f"watch {world.squad_id}")
    assert answer.ui is None
    assert answer.notify is not None
    assert answer.notify == (
        f"Squad {world.squad_id} is done: no child runs, so there is nothing to watch; "
        f"/squad report {world.squad_id} writes its evidence pack."
    )
    assert "widget" not in answer.notify


def test_watch_on_a_squad_in_review_names_the_review(role: MainRole, world: RuntimeWorld) -> None:
    run_to_review(world)
    answer = role.command("squad", "watch")
    assert answer.notify is not None
    assert answer.notify.endswith(f"nothing to watch; /squad review {world.squad_id} reviews it.")


def test_tab_offers_no_squad_ids_after_inspect(role: MainRole) -> None:
    assert "inspect" in role.completions("squad", "ins")
    assert role.completions("squad", "inspect ") == ()
