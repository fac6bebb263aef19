"""squad_modify ``cancel_task``, ``pause_task`` and ``resume_task``: what a cancel keeps and
refuses, a cancelled dependency that never unblocks, a task's session continued, its descendants
reblocked, its budgets and progress records reset."""

from __future__ import annotations

from application.squads.operations import BUDGETS_RESET, SquadOperations
from domain.errors import ErrorCode
from domain.squad.model import ReviewStatus, SquadStatus, TaskStatus, Verdict
from tests.integration.ops_support import (
    EVIDENCE,
    LINE_SPEC,
    NewWorld,
    finish,
    mailbox,
    operations,
    recorder,
    run_to_review,
    send_late_events,
    settle,
    squad_files,
    squad_status,
    unchanged,
)
from tests.integration.scheduler_steps import (
    bound_child,
    failed_squad,
    resumed_session_file,
    started,
)
from tests.runtime_world import RuntimeWorld


def test_cancel_task_with_live_dependents_is_refused_without_killing_anything(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    scheduler = started(world)
    finish(world, scheduler, "design")
    assert world.runtime.live_task_ids() == ["build", "docs"]
    message = unchanged(
        world, ErrorCode.OPERATION_REFUSED, lambda: ops.cancel_task(world.squad_id, "design")
    )
    assert "- build [in_progress]\n- docs [in_progress]" in message
    assert "set_dependencies" in message
    scheduler.reconcile()
    assert world.runtime.live_task_ids() == ["build", "docs"]
    assert world.task("design").status is TaskStatus.DONE


def test_safe_cancel_keeps_output_session_and_mail_and_the_squad_goes_to_review(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    scheduler = started(world)
    for task_id in ("design", "build", "docs"):
        finish(world, scheduler, task_id)
    qa_child = bound_child(world, scheduler, "qa")
    mailbox(world).queue_message(world.squad_id, "qa", "Also check the docs.", message_id="m-1")
    history = world.store.messages(world.squad_id, "qa")
    ops.cancel_task(world.squad_id, "qa")
    cancelled = world.task("qa")
    assert cancelled.status is TaskStatus.CANCELLED
    assert cancelled.error is None
    assert cancelled.completed is not None
    assert cancelled.session is not None
    assert cancelled.session.file == world.session_of("qa")
    assert [e.id for e in world.store.mailbox(world.squad_id, "qa")] == ["m-1"]
    assert world.store.messages(world.squad_id, "qa")[: len(history)] == history
    scheduler.reconcile()
    assert qa_child.killed
    assert squad_status(world) is SquadStatus.REVIEW
    # A late completion or failure from the killed child changes nothing.
    send_late_events(world, scheduler, qa_child)
    assert world.task("qa").status is TaskStatus.CANCELLED
    assert world.task("qa").output is None


def test_cancel_of_a_done_task_after_a_failed_review_is_rework_keeping_its_output(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    scheduler = run_to_review(world)
    recorder(world).record_review(
        world.squad_id, Verdict.FAIL, **EVIDENCE, issues=["qa is redundant"]
    )
    output = world.task("qa").output
    ops.cancel_task(world.squad_id, "qa")
    squad = world.store.snapshot(world.squad_id).squad
    assert squad.status is SquadStatus.RUNNING
    assert [r.status for r in squad.review_history] == [ReviewStatus.FAILED]
    assert world.task("qa").output == output
    scheduler.reconcile()
    squad = world.store.snapshot(world.squad_id).squad
    assert squad.status is SquadStatus.REVIEW
    assert squad.review is not None
    assert squad.review.status is ReviewStatus.PENDING


def test_cancel_of_an_already_cancelled_task_is_a_no_op(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    ops.cancel_task(world.squad_id, "qa")
    before = squad_files(world)
    result = ops.cancel_task(world.squad_id, "qa")
    assert result.changed is False
    assert squad_files(world) == before


def test_a_cancelled_dependency_never_unblocks_and_only_resume_task_revives_it(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    scheduler = started(world)
    finish(world, scheduler, "design")
    ops.cancel_task(world.squad_id, "qa")
    ops.set_dependencies(world.squad_id, "qa", ["docs"])
    ops.cancel_task(world.squad_id, "docs")  # its one dependent is cancelled: allowed
    ops.resume_task(world.squad_id, "qa")  # revived, but its dependency is cancelled
    assert world.task("qa").status is TaskStatus.BLOCKED
    ops.resume(world.squad_id)
    assert world.task("docs").status is TaskStatus.CANCELLED, "squad resume leaves it alone"
    scheduler.reconcile()
    finish(world, scheduler, "build")
    scheduler.reconcile()
    assert world.task("qa").status is TaskStatus.BLOCKED
    assert "qa" not in world.runtime.live_task_ids()
    ops.resume_task(world.squad_id, "docs")
    assert world.task("docs").status is TaskStatus.PENDING
    scheduler.reconcile()
    finish(world, scheduler, "docs")
    assert "qa" in world.runtime.live_task_ids()


def test_pause_task_suspends_and_the_scheduler_stops_the_child_late_events_change_nothing(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    scheduler = started(world)
    child = bound_child(world, scheduler, "design")
    ops.pause_task(world.squad_id, "design")
    assert world.task("design").status is TaskStatus.SUSPENDED
    scheduler.reconcile()
    assert child.killed
    send_late_events(world, scheduler, child)
    assert world.task("design").status is TaskStatus.SUSPENDED
    assert len(world.runtime.for_task("design")) == 1, "a suspended task is never respawned"
    assert ops.pause_task(world.squad_id, "design").changed is False


def test_pause_task_refuses_cancelled_and_done_tasks(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    scheduler = started(world)
    finish(world, scheduler, "design")
    ops.cancel_task(world.squad_id, "qa")
    assert "cancelled" in unchanged(
        world, ErrorCode.OPERATION_REFUSED, lambda: ops.pause_task(world.squad_id, "qa")
    )
    assert "done" in unchanged(
        world, ErrorCode.OPERATION_REFUSED, lambda: ops.pause_task(world.squad_id, "design")
    )


def test_resume_task_continues_the_same_session_and_a_running_task_is_not_duplicated(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    scheduler = started(world)
    bound_child(world, scheduler, "design")
    again = ops.resume_task(world.squad_id, "design")
    assert again.changed is False
    assert "already running" in again.text
    scheduler.reconcile()
    assert len(world.runtime.for_task("design")) == 1
    ops.pause_task(world.squad_id, "design")
    scheduler.reconcile()
    result = ops.resume_task(world.squad_id, "design")
    assert result.reset_budgets == ("design",)
    assert world.task("build").status is TaskStatus.BLOCKED, "descendants stay blocked"
    assert world.task("docs").status is TaskStatus.BLOCKED
    scheduler.reconcile()
    second = world.runtime.latest("design")
    assert len(world.runtime.for_task("design")) == 2
    assert resumed_session_file(second) == world.session_of("design")


def test_resume_task_of_a_done_root_reblocks_every_descendant_and_they_rerun_in_order(
    new_world: NewWorld,
) -> None:
    world = new_world(LINE_SPEC)
    ops = operations(world)
    order = ("contract", "impl", "check", "release")
    run_to_review(world, order)
    scheduler = world.scheduler()
    ops.resume_task(world.squad_id, "contract")
    tasks = world.store.snapshot(world.squad_id).tasks
    assert tasks["contract"].status is TaskStatus.PENDING
    for descendant in order[1:]:
        assert tasks[descendant].status is TaskStatus.BLOCKED
        assert tasks[descendant].completed is None
    assert squad_status(world) is SquadStatus.RUNNING
    scheduler.reconcile()
    for task_id in order:
        assert world.runtime.live_task_ids() == [task_id]
        finish(world, scheduler, task_id)
    assert squad_status(world) is SquadStatus.REVIEW


def test_resume_task_revives_a_cancelled_task(world: RuntimeWorld, ops: SquadOperations) -> None:
    ops.cancel_task(world.squad_id, "qa")
    ops.resume_task(world.squad_id, "qa")
    assert world.task("qa").status is TaskStatus.BLOCKED
    assert world.task("qa").completed is None


def test_resume_task_moves_an_invalid_progress_record_aside_so_the_task_can_read_again(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    scheduler = started(world)
    finish(world, scheduler, "design")
    ops.pause_task(world.squad_id, "build")
    # A record bound to another task conflicts: it is never accepted as build's coverage.
    build_dir = world.layout().ledger_dir("build")
    conflicting = world.read_file(world.ledger_file("design", "spec-read-state.json"))
    world.write_file(world.ledger_file("build", "spec-read-state.json"), conflicting)
    assert not world.attestation("build").valid
    ops.resume_task(world.squad_id, "build")
    moved = world.list_dir(build_dir, "spec-read-state.json.invalid-*")
    assert len(moved) == 1
    assert world.read_file(f"{build_dir}/{moved[0]}") == conflicting, "kept for audit, unchanged"
    assert not world.exists(world.ledger_file("build", "spec-read-state.json"))
    scheduler.reconcile()  # the resumed task's child starts and reads while the parent watches
    world.attest("build")
    scheduler.pump()
    assert world.attestation("build").valid


def test_resume_task_leaves_a_valid_progress_record_alone(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    world.attest("design")
    state = world.read_file(world.ledger_file("design", "spec-read-state.json"))
    ops.pause_task(world.squad_id, "design")
    ops.resume_task(world.squad_id, "design")
    assert world.read_file(world.ledger_file("design", "spec-read-state.json")) == state
    assert world.list_dir(world.layout().ledger_dir("design"), "*.invalid-*") == []


def test_resume_task_records_a_durable_budget_reset(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    ops.pause_task(world.squad_id, "design")
    ops.resume_task(world.squad_id, "design")
    texts = [m.text for m in world.store.messages(world.squad_id, "design")]
    assert any(text.startswith(BUDGETS_RESET) for text in texts)


def test_resume_task_restores_the_retry_budget(world: RuntimeWorld, ops: SquadOperations) -> None:
    scheduler = failed_squad(world)
    ops.resume_task(world.squad_id, "design")
    scheduler.reconcile()
    world.runtime.latest("design").exit(1, "again")
    scheduler.pump()
    assert world.task("design").status is TaskStatus.PENDING, "retried, not failed at once"


def test_after_three_rejections_resume_task_makes_the_next_rejection_reopen_again(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    scheduler = started(world)
    for _ in range(3):
        settle(world, scheduler, "design", "done")
    design = world.task("design")
    assert design.status is TaskStatus.SUSPENDED
    assert design.error is not None
    assert design.error.startswith("Attestation rejected 3x")
    ops.resume_task(world.squad_id, "design")
    assert world.task("design").error is None
    scheduler.reconcile()
    settle(world, scheduler, "design", "done")
    assert world.task("design").status is TaskStatus.IN_PROGRESS, "reopened and respawned"
    assert [n.kind for n in world.notices].count("escalation") == 1
