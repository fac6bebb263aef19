"""squad_modify ``add_task`` (upstream §3 and §7; contract §10.2 and §10.6): ids, dependencies,
agents, forks and reserved names, on every world kind (tests/integration/conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from application.ports import ForkSession, NewSession
from application.squads.operations import Action, NewTask, SquadOperations
from domain.errors import ErrorCode
from domain.squad.model import ReviewStatus, SquadStatus, TaskStatus
from tests.integration.ops_support import (
    assert_still_paused,
    finish,
    publish_legacy,
    refused,
    refused_add_task,
    run_to_review,
    settle,
    squad_files,
    unchanged,
)
from tests.integration.scheduler_steps import bound_child, started
from tests.runtime_world import RuntimeWorld


@pytest.mark.parametrize(
    "bad_id", ["Upper", "under_score", "a" * 65, "-lead", "trail-", "../escape", "spec", ""]
)
def test_add_task_checks_the_file_squad_id_pattern_before_any_path_is_built(
    world: RuntimeWorld, ops: SquadOperations, bad_id: str
) -> None:
    entries = world.list_dir(world.layout().squad_dir)
    message = refused_add_task(world, ops, ErrorCode.INVALID_TASK_ID, bad_id)
    assert "task.id must match ^[a-z0-9]" in message
    assert world.list_dir(world.layout().squad_dir) == entries
    assert not world.exists(f"{world.root}/escape")


def test_add_task_refuses_a_duplicate_id(world: RuntimeWorld, ops: SquadOperations) -> None:
    message = refused_add_task(world, ops, ErrorCode.TASK_EXISTS, "build")
    assert "'build' already exists" in message


def test_add_task_refuses_unknown_dependencies_listing_the_existing_ids(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    new = NewTask(id="extra", title="t", agent="backend", depends=("design", "nope"))
    message = unchanged(
        world, ErrorCode.DEPENDENCY_INVALID, lambda: ops.add_task(world.squad_id, new)
    )
    assert "'nope'" in message
    assert "existing task ids: build, design, docs, qa" in message


def test_add_task_refuses_an_unknown_or_disabled_agent_listing_the_enabled_ones(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    agents = Path(world.cwd, ".pi", "squad", "agents")  # read from the real disk in every kind
    agents.mkdir(parents=True)
    (agents / "frontend.json").write_text(
        json.dumps(
            {"name": "frontend", "role": "r", "description": "d", "prompt": "p", "disabled": True}
        )
    )
    missing = refused_add_task(world, ops, ErrorCode.AGENT_UNAVAILABLE, "x", agent="nobody")
    assert "'nobody' is missing" in missing
    assert "enabled agents: " in missing
    assert "backend" in missing
    disabled = refused_add_task(world, ops, ErrorCode.AGENT_UNAVAILABLE, "x", agent="frontend")
    assert "'frontend' is disabled" in disabled
    assert "frontend" not in disabled.split("enabled agents: ")[1].split(", ")


def test_added_task_is_pending_when_its_dependencies_are_done_else_blocked(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    scheduler = started(world)
    finish(world, scheduler, "design")
    ops.add_task(
        world.squad_id, NewTask(id="after-design", title="t", agent="backend", depends=("design",))
    )
    ops.add_task(
        world.squad_id, NewTask(id="after-qa", title="t", agent="backend", depends=("qa",))
    )
    added = world.task("after-design")
    assert added.status is TaskStatus.PENDING
    assert added.file_spec_delta is True
    assert added.session is None
    assert world.task("after-qa").status is TaskStatus.BLOCKED


def test_add_task_to_a_review_squad_is_rework_and_needs_its_own_fresh_attestation(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    scheduler = run_to_review(world)
    result = ops.add_task(
        world.squad_id,
        NewTask(id="polish", title="Polish", agent="backend", depends=("qa",)),
    )
    assert result.action is Action.ADD_TASK
    squad = world.store.snapshot(world.squad_id).squad
    assert squad.status is SquadStatus.RUNNING
    assert squad.review is None
    assert [r.status for r in squad.review_history] == [ReviewStatus.PENDING]
    scheduler.reconcile()
    child = world.runtime.latest("polish")
    assert isinstance(child.request.session, NewSession), "a new task gets its own session"
    assert "Polish" in child.request.first_prompt, "an added task's text is a delta, not spec"
    # Every other task has a valid attestation; the added one has none of its own.
    settle(world, scheduler, "polish", "Polished, trust me.")
    assert world.task("polish").status is not TaskStatus.DONE
    assert world.task("polish").output is None
    finish(world, scheduler, "polish")
    assert world.task("polish").status is TaskStatus.DONE
    squad = world.store.snapshot(world.squad_id).squad
    assert squad.status is SquadStatus.REVIEW
    assert squad.review is not None
    assert squad.review.status is ReviewStatus.PENDING


def test_fork_from_task_rules(world: RuntimeWorld, ops: SquadOperations) -> None:
    scheduler = started(world)
    bound_child(world, scheduler, "design")
    both = NewTask(
        id="f", title="t", agent="backend", inherit_context=True, fork_from_task="design"
    )
    assert "cannot be combined" in unchanged(
        world, ErrorCode.TASK_INPUT_INVALID, lambda: ops.add_task(world.squad_id, both)
    )
    unknown = NewTask(id="f", title="t", agent="backend", fork_from_task="ghost")
    refused(ErrorCode.TASK_NOT_FOUND, lambda: ops.add_task(world.squad_id, unknown))
    unbound = NewTask(id="f", title="t", agent="backend", fork_from_task="build")
    assert "no bound session" in unchanged(
        world, ErrorCode.OPERATION_REFUSED, lambda: ops.add_task(world.squad_id, unbound)
    )
    ops.add_task(
        world.squad_id, NewTask(id="f", title="t", agent="backend", fork_from_task="design")
    )
    assert world.task("f").fork_from_task_id == "design"
    scheduler.reconcile()
    session = world.runtime.latest("f").request.session
    assert isinstance(session, ForkSession)
    assert session.source_file == world.session_of("design")


def test_add_task_to_a_paused_squad_leaves_it_paused(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    ops.pause(world.squad_id)
    result = ops.add_task(world.squad_id, NewTask(id="later", title="t", agent="backend"))
    assert "paused" in result.text
    assert_still_paused(world)


def test_add_task_in_a_legacy_squad_uses_the_legacy_id_rule(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    legacy = publish_legacy(world)
    ops.add_task(legacy, NewTask(id="Mixed_Case.1", title="t", agent="backend"))
    added = world.store.snapshot(legacy).tasks["Mixed_Case.1"]
    assert added.file_spec_delta is False
    refused(
        ErrorCode.INVALID_TASK_ID,
        lambda: ops.add_task(legacy, NewTask(id="../x", title="t", agent="backend")),
    )


def test_operations_on_a_missing_squad_create_nothing(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    before = world.list_dir(world.root)
    refused(ErrorCode.SQUAD_NOT_FOUND, lambda: ops.pause_task("no-such-squad", "x"))
    refused(ErrorCode.SQUAD_NOT_FOUND, lambda: ops.pause("no-such-squad"))
    assert world.list_dir(world.root) == before


@pytest.mark.parametrize("reserved", ["con", "nul", "lpt1", "com9", "spec", "session"])
def test_add_task_refuses_a_reserved_file_squad_task_id(
    world: RuntimeWorld, ops: SquadOperations, reserved: str
) -> None:
    message = refused_add_task(world, ops, ErrorCode.INVALID_TASK_ID, reserved)
    assert f"Invalid file-spec task id '{reserved}'" in message
    assert "; this one is reserved: it " in message


@pytest.mark.parametrize(
    "reserved", ["CON", "Nul", "con.txt", "Aux.log", "LPT1", "Session", "SPEC", "Knowledge"]
)
def test_add_task_refuses_reserved_ids_in_any_case_in_a_legacy_squad(
    world: RuntimeWorld, ops: SquadOperations, reserved: str
) -> None:
    legacy = publish_legacy(world)
    before = squad_files(world, legacy)
    message = refused(
        ErrorCode.INVALID_TASK_ID,
        lambda: ops.add_task(legacy, NewTask(id=reserved, title="t", agent="backend")),
    )
    assert f"Invalid task id '{reserved}'" in message
    assert "; this one is reserved: it " in message
    assert squad_files(world, legacy) == before
