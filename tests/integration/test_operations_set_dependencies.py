"""squad_modify ``set_dependencies``: validated atomically, recomputing only pending and blocked
tasks, on every world kind (tests/integration/conftest.py)."""

from __future__ import annotations

from application.squads.operations import SquadOperations
from domain.errors import ErrorCode
from domain.squad.model import TaskStatus
from tests.integration.ops_support import (
    assert_running_again,
    assert_still_paused,
    finish,
    refused,
    unchanged,
)
from tests.integration.scheduler_steps import failed_squad, started
from tests.runtime_world import RuntimeWorld


def test_set_dependencies_validates_atomically(world: RuntimeWorld, ops: SquadOperations) -> None:
    squad = world.squad_id
    assert "'ghost'" in unchanged(
        world, ErrorCode.DEPENDENCY_INVALID, lambda: ops.set_dependencies(squad, "qa", ["ghost"])
    )
    assert "more than once" in unchanged(
        world,
        ErrorCode.DEPENDENCY_INVALID,
        lambda: ops.set_dependencies(squad, "qa", ["build", "build"]),
    )
    assert "itself" in unchanged(
        world, ErrorCode.DEPENDENCY_INVALID, lambda: ops.set_dependencies(squad, "qa", ["qa"])
    )
    message = unchanged(
        world, ErrorCode.DEPENDENCY_CYCLE, lambda: ops.set_dependencies(squad, "design", ["qa"])
    )
    assert "Dependency cycle detected: design -> qa -> build -> design" in message
    refused(ErrorCode.TASK_NOT_FOUND, lambda: ops.set_dependencies(squad, "ghost", []))


def test_set_dependencies_is_refused_for_in_progress_and_done_tasks(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    scheduler = started(world)
    assert "in_progress" in unchanged(
        world,
        ErrorCode.OPERATION_REFUSED,
        lambda: ops.set_dependencies(world.squad_id, "design", []),
    )
    finish(world, scheduler, "design")
    assert "is done" in unchanged(
        world,
        ErrorCode.OPERATION_REFUSED,
        lambda: ops.set_dependencies(world.squad_id, "design", []),
    )


def test_set_dependencies_recomputes_only_pending_and_blocked_tasks(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    result = ops.set_dependencies(world.squad_id, "build", [])
    assert world.task("build").status is TaskStatus.PENDING
    assert world.task("build").depends == ()
    assert "pending" in result.text
    ops.set_dependencies(world.squad_id, "build", ["design"])
    assert world.task("build").status is TaskStatus.BLOCKED
    # A cancelled task keeps its status.
    ops.cancel_task(world.squad_id, "qa")
    ops.set_dependencies(world.squad_id, "qa", [])
    assert world.task("qa").status is TaskStatus.CANCELLED
    assert world.task("qa").depends == ()


def test_set_dependencies_keeps_a_failed_task_failed_with_its_error(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    failed_squad(world)
    error = world.task("design").error
    ops.set_dependencies(world.squad_id, "design", [])
    assert world.task("design").status is TaskStatus.FAILED
    assert world.task("design").error == error


def test_set_dependencies_leaves_a_paused_squad_paused(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    ops.pause(world.squad_id)
    ops.set_dependencies(world.squad_id, "build", [])
    assert_still_paused(world)


def test_newly_runnable_dependencies_reopen_a_failed_squad(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    scheduler = failed_squad(world)
    ops.set_dependencies(world.squad_id, "docs", [])
    assert world.task("docs").status is TaskStatus.PENDING
    assert_running_again(world, scheduler, ["docs"])
