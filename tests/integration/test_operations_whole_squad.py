"""squad_modify ``pause``, ``resume`` and ``cancel`` of a whole squad, which never touch another
squad under the same root."""

from __future__ import annotations

from application.ports import ResumeSession
from application.squads.operations import SquadOperations
from domain.errors import ErrorCode
from domain.squad.model import ReviewStatus, SquadStatus, TaskStatus, Verdict
from tests.builders import encode, spec_document, task
from tests.integration.ops_support import (
    EVIDENCE,
    NewWorld,
    assert_running_again,
    operations,
    recorder,
    refused,
    run_to_review,
    squad_files,
    squad_status,
    unchanged,
)
from tests.integration.scheduler_steps import bound_child, failed_squad, started
from tests.runtime_world import RuntimeWorld


def test_pause_suspends_running_work_and_resume_continues_it_on_the_same_sessions(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    scheduler = started(world)
    child = bound_child(world, scheduler, "design")
    ops.pause(world.squad_id)
    assert squad_status(world) is SquadStatus.PAUSED
    assert world.task("design").status is TaskStatus.SUSPENDED
    scheduler.reconcile()
    assert child.killed
    scheduler.reconcile()
    assert len(world.runtime.spawned) == 1, "nothing runs in a paused squad"
    assert ops.pause(world.squad_id).changed is False
    result = ops.resume(world.squad_id)
    assert result.reset_budgets == ("design",)
    assert squad_status(world) is SquadStatus.RUNNING
    scheduler.reconcile()
    resumed = world.runtime.latest("design")
    assert resumed is not child
    assert isinstance(resumed.request.session, ResumeSession)


def test_resume_of_a_failed_squad_respawns_failed_tasks_with_the_error_cleared(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    scheduler = failed_squad(world)
    ops.resume(world.squad_id)
    assert world.task("design").status is TaskStatus.PENDING
    assert world.task("design").error is None
    assert_running_again(world, scheduler, ["design"])


def test_resume_after_a_failed_review_with_resumed_work_is_rework(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    run_to_review(world)
    recorder(world).record_review(
        world.squad_id, Verdict.FAIL, **EVIDENCE, issues=["build is wrong"]
    )
    ops.resume(world.squad_id)
    assert squad_status(world) is SquadStatus.REVIEW, "nothing was resumed: no rework"
    ops.resume_task(world.squad_id, "build")
    squad = world.store.snapshot(world.squad_id).squad
    assert squad.status is SquadStatus.RUNNING
    assert [r.status for r in squad.review_history] == [ReviewStatus.FAILED]


def test_pause_refuses_a_squad_in_review(world: RuntimeWorld, ops: SquadOperations) -> None:
    run_to_review(world)
    unchanged(world, ErrorCode.OPERATION_REFUSED, lambda: ops.pause(world.squad_id))


OTHER_SPEC = encode(
    spec_document(
        goal="Another squad entirely.",
        tasks=[task("alpha"), task("beta", depends=["alpha"])],
    )
)


def test_cancel_requires_an_exact_squad_id(world: RuntimeWorld, ops: SquadOperations) -> None:
    before = squad_files(world)
    assert "requires exact squadId" in refused(ErrorCode.OPERATION_REFUSED, lambda: ops.cancel(""))
    refused(ErrorCode.OPERATION_REFUSED, lambda: ops.cancel("   "))
    prefix = world.squad_id[:-3]
    assert "not found; no squad was changed" in refused(
        ErrorCode.SQUAD_NOT_FOUND, lambda: ops.cancel(prefix)
    )
    assert squad_files(world) == before


def test_cancel_pause_and_resume_of_one_squad_never_touch_another(new_world: NewWorld) -> None:
    first = new_world()
    second = new_world(OTHER_SPEC, sibling_of=first)
    assert first.squad_id != second.squad_id
    scheduler_a = first.scheduler()
    scheduler_b = second.scheduler()
    scheduler_a.reconcile()
    scheduler_b.reconcile()
    a_child = first.runtime.latest("design")
    b_child = second.runtime.latest("alpha")
    ops = operations(first)
    a_before = squad_files(first)
    ops.pause(second.squad_id)
    ops.resume(second.squad_id)
    scheduler_b.reconcile()
    b_child = second.runtime.latest("alpha")
    result = ops.cancel(second.squad_id)
    assert "cancelled" in result.text
    assert squad_status(second) is SquadStatus.FAILED
    assert second.task("alpha").status is TaskStatus.SUSPENDED
    scheduler_a.reconcile()
    scheduler_b.reconcile()
    assert b_child.killed
    assert not a_child.killed
    assert first.task("design").status is TaskStatus.IN_PROGRESS
    assert squad_files(first) == a_before
    assert squad_status(first) is SquadStatus.RUNNING


def test_a_cancelled_squad_stays_cancelled_while_its_scheduler_still_runs(
    new_world: NewWorld,
) -> None:
    spec = encode(
        spec_document(
            tasks=[task("t0"), task("t1")],
            config={"maxConcurrency": 1, "autoUnblock": True, "maxRetries": 2},
        )
    )
    world = new_world(spec)
    scheduler = started(world)
    assert world.runtime.live_task_ids() == ["t0"]
    operations(world).cancel(world.squad_id)
    scheduler.reconcile()
    assert squad_status(world) is SquadStatus.FAILED
    assert world.runtime.live_task_ids() == []


def test_cancel_of_a_done_squad_is_refused(world: RuntimeWorld, ops: SquadOperations) -> None:
    run_to_review(world)
    recorder(world).record_review(world.squad_id, Verdict.PASS, **EVIDENCE)
    unchanged(world, ErrorCode.OPERATION_REFUSED, lambda: ops.cancel(world.squad_id))
