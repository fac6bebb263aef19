"""``pi-squad modify`` in a subprocess: one JSON object per action, coded refusals, usage errors,
strictly decoded tasks, and a running scheduler picking the change up."""

from __future__ import annotations

import json

import pytest

from domain.squad.model import Actor, SquadStatus, TaskStatus
from tests.integration.cli_runtime.support import cli, error, modify, ok
from tests.integration.cli_support import Sandbox
from tests.integration.ops_support import finish, squad_files, squad_status
from tests.integration.scheduler_steps import started
from tests.runtime_world import RuntimeWorld
from tests.squads import BAD_NEW_TASKS


def test_modify_task_actions_print_one_json_object(sandbox: Sandbox, world: RuntimeWorld) -> None:
    task_json = json.dumps({"id": "extra", "title": "Extra", "agent": "backend", "depends": []})
    document = ok(modify(sandbox, world, "add_task", "--task-json", task_json))
    assert document == {
        "squadId": world.squad_id,
        "action": "add_task",
        "taskId": "extra",
        "result": f"Task 'extra' added to squad '{world.squad_id}' (pending).",
    }
    for depends, expected in (("design,docs", ("design", "docs")), ("", ())):
        document = ok(
            modify(sandbox, world, "set_dependencies", "--task-id", "extra", "--depends", depends)
        )
        assert set(document) == {"squadId", "action", "taskId", "result"}
        assert world.task("extra").depends == expected
    for action in ("pause_task", "resume_task", "cancel_task"):
        document = ok(modify(sandbox, world, action, "--task-id", "extra"))
        assert document["action"] == action
    assert world.task("extra").status is TaskStatus.CANCELLED


def test_modify_squad_actions_have_no_task_id(sandbox: Sandbox, world: RuntimeWorld) -> None:
    for action, status in (("pause", "paused"), ("resume", "running"), ("cancel", "failed")):
        document = ok(modify(sandbox, world, action))
        assert set(document) == {"squadId", "action", "result"}
        assert document["action"] == action
        assert squad_status(world) == SquadStatus(status)
    cancelled = world.store.snapshot(world.squad_id).squad
    assert cancelled.cancelled_by is Actor.TERMINAL, "a terminal's cancel is recorded as such"


def test_modify_refusals_exit_1_with_a_coded_error(sandbox: Sandbox, world: RuntimeWorld) -> None:
    squad = world.squad_id
    message = error(
        modify(sandbox, world, "complete_task", "--task-id", "design"), "ATTESTATION_INVALID"
    )
    assert message.startswith("cannot complete: ")
    assert world.task("design").status is TaskStatus.PENDING
    error(modify(sandbox, world, "cancel_task", "--task-id", "design"), "OPERATION_REFUSED")
    error(
        modify(sandbox, world, "set_dependencies", "--task-id", "design", "--depends", "qa"),
        "DEPENDENCY_CYCLE",
    )
    error(modify(sandbox, world, "pause_task", "--task-id", "ghost"), "TASK_NOT_FOUND")
    error(cli(sandbox, world, "modify", "no-such-squad", "pause", "--json"), "SQUAD_NOT_FOUND")
    text = cli(sandbox, world, "modify", squad, "pause_task", "--task-id", "ghost")
    assert text.returncode == 1
    assert "TASK_NOT_FOUND" in text.stderr


@pytest.mark.parametrize(
    "arguments",
    [
        ["pause_task"],
        ["teleport"],
        ["pause", "--task-id", "design"],
        ["add_task"],
        ["cancel_task", "--task-id", "qa", "--output", "x"],
        ["set_dependencies", "--task-id", "qa"],
        ["set_dependencies", "--task-id", "qa", "--depends", "build,,docs"],
        ["pause", "--task-json", "{}"],
    ],
)
def test_modify_usage_errors_exit_2(
    sandbox: Sandbox, world: RuntimeWorld, arguments: list[str]
) -> None:
    before = squad_files(world)
    message = error(modify(sandbox, world, *arguments), "USAGE", exit_code=2)
    assert message.startswith("pi-squad modify: ")
    assert squad_files(world) == before


@pytest.mark.parametrize(
    ("task_json", "complaint"),
    [
        ('{"id":"x","title":"t","agent":"backend","id":"y"}', "duplicate object key 'id'"),
        ("[1]", "not a JSON object"),
        *((json.dumps(task), complaint) for task, complaint in BAD_NEW_TASKS),
    ],
)
def test_add_task_json_is_decoded_strictly(
    sandbox: Sandbox, world: RuntimeWorld, task_json: str, complaint: str
) -> None:
    message = error(
        modify(sandbox, world, "add_task", "--task-json", task_json), "TASK_INPUT_INVALID"
    )
    assert message.startswith("--task-json: ")
    assert complaint in message
    assert "x" not in world.store.snapshot(world.squad_id).tasks


def test_a_modify_from_another_process_is_picked_up_by_a_running_scheduler(
    sandbox: Sandbox, world: RuntimeWorld
) -> None:
    scheduler = started(world)
    child = world.runtime.latest("design")
    ok(modify(sandbox, world, "pause_task", "--task-id", "design"))
    scheduler.reconcile()
    assert child.killed
    ok(modify(sandbox, world, "resume_task", "--task-id", "design"))
    scheduler.reconcile()
    assert world.runtime.live_task_ids() == ["design"]
    finish(world, scheduler, "design")
    assert world.task("design").status is TaskStatus.DONE
