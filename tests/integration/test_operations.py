"""squad_modify operations (upstream §3 and §7; contract §10.2 and §10.6) on the in-memory store
and on a real squad root (tests/integration/conftest.py), with a fake child runtime standing in
for the children of a running scheduler."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from application.ports import ForkSession, NewSession, ResumeSession
from application.squads.operations import (
    BUDGETS_RESET,
    MARKED_DONE_OUTPUT,
    Action,
    NewTask,
    SquadOperations,
)
from application.squads.scheduler import Scheduler
from domain.errors import ErrorCode
from domain.squad.model import ReviewStatus, SquadStatus, TaskStatus, Verdict
from tests.builders import encode, spec_document, task
from tests.fakes.child_runtime import FakeChild
from tests.integration.ops_support import (
    EVIDENCE,
    LINE_SPEC,
    NewWorld,
    fail_task,
    finish,
    mailbox,
    operations,
    publish_legacy,
    recorder,
    refused,
    run_to_review,
    settle,
    squad_files,
    squad_status,
    statuses,
    tamper,
    unchanged,
)
from tests.integration.scheduler_steps import (
    bound_child,
    failed_squad,
    resumed_session_file,
    started,
)
from tests.runtime_world import RuntimeWorld


def refused_add_task(
    world: RuntimeWorld, ops: SquadOperations, code: ErrorCode, task_id: str, agent: str = "backend"
) -> str:
    """The message of an ``add_task`` of ``task_id`` refused with ``code``, the squad unchanged."""
    new = NewTask(id=task_id, title="t", agent=agent)
    return unchanged(world, code, lambda: ops.add_task(world.squad_id, new))


def assert_still_paused(world: RuntimeWorld) -> None:
    """The squad is still paused, and the scheduler's next pass spawns nothing."""
    assert squad_status(world) is SquadStatus.PAUSED
    world.scheduler().reconcile()
    assert world.runtime.spawned == []


def assert_running_again(world: RuntimeWorld, scheduler: Scheduler, live: list[str]) -> None:
    """The squad runs again, and the scheduler's next pass leaves exactly ``live`` running."""
    assert squad_status(world) is SquadStatus.RUNNING
    scheduler.reconcile()
    assert world.runtime.live_task_ids() == live


def send_late_events(world: RuntimeWorld, scheduler: Scheduler, child: FakeChild) -> None:
    """What a stopped child's process may still send: an attestation, a report, its settlement
    and a crash."""
    world.attest(child.task_id)
    child.say("late report")
    child.settle()
    child.exit(1, "late crash")
    scheduler.pump()


# -- add_task ---------------------------------------------------------------------------------


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


# -- set_dependencies -------------------------------------------------------------------------


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


# -- cancel_task ------------------------------------------------------------------------------


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


# -- pause_task / resume_task -----------------------------------------------------------------


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
    check = world.auditor.validate_task_attestation(
        world.store.snapshot(world.squad_id).squad, world.task("build")
    )
    assert not check.valid
    ops.resume_task(world.squad_id, "build")
    moved = world.list_dir(build_dir, "spec-read-state.json.invalid-*")
    assert len(moved) == 1
    assert world.read_file(f"{build_dir}/{moved[0]}") == conflicting, "kept for audit, unchanged"
    assert not world.exists(world.ledger_file("build", "spec-read-state.json"))
    scheduler.reconcile()  # the resumed task's child starts and reads while the parent watches
    world.attest("build")
    scheduler.pump()
    check = world.auditor.validate_task_attestation(
        world.store.snapshot(world.squad_id).squad, world.task("build")
    )
    assert check.valid


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


# -- complete_task ----------------------------------------------------------------------------


def test_complete_task_without_attestation_is_refused_without_mutating_anything(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    started(world)
    before = world.task("design")
    message = unchanged(
        world,
        ErrorCode.ATTESTATION_INVALID,
        lambda: ops.complete_task(world.squad_id, "design", "it is fine"),
    )
    assert message.startswith("cannot complete: ")
    assert world.task("design") == before
    assert world.task("build").status is TaskStatus.BLOCKED


def test_complete_task_with_a_tampered_attestation_is_refused(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    world.attest("design")
    tamper(world, "design")
    unchanged(
        world, ErrorCode.ATTESTATION_INVALID, lambda: ops.complete_task(world.squad_id, "design")
    )


def test_complete_task_on_a_failed_task_unblocks_dependents_and_heals_the_squad(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    scheduler = started(world)
    world.attest("design")  # its child read the whole spec, observed by the parent, then crashed
    scheduler.pump()
    fail_task(world, scheduler, "design")
    assert squad_status(world) is SquadStatus.FAILED
    result = ops.complete_task(world.squad_id, "design", "Recovered by hand.")
    design = world.task("design")
    assert design.status is TaskStatus.DONE
    assert design.output == "Recovered by hand."
    assert design.error is None, "completion clears an earlier error"
    assert design.completed is not None
    assert result.reset_budgets == ("design",)
    assert statuses(world)["build"] is TaskStatus.PENDING
    assert_running_again(world, scheduler, ["build", "docs"])


def test_complete_task_output_defaults_and_no_ops(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    legacy = publish_legacy(world)
    ops.complete_task(legacy, "api")  # legacy: no attestation required
    assert world.store.snapshot(legacy).tasks["api"].output == MARKED_DONE_OUTPUT
    assert world.store.snapshot(legacy).tasks["ui"].status is TaskStatus.PENDING
    assert ops.complete_task(legacy, "api", "other").changed is False
    assert world.store.snapshot(legacy).tasks["api"].output == MARKED_DONE_OUTPUT
    ops.cancel_task(legacy, "ui")
    refused(ErrorCode.OPERATION_REFUSED, lambda: ops.complete_task(legacy, "ui"))


def test_complete_task_keeps_an_existing_output(world: RuntimeWorld, ops: SquadOperations) -> None:
    scheduler = started(world)
    finish(world, scheduler, "design", "The design.")
    ops.resume_task(world.squad_id, "design")
    ops.complete_task(world.squad_id, "design")
    assert world.task("design").output == "The design."


# -- the whole squad --------------------------------------------------------------------------


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


# -- generated work in a file squad -----------------------------------------------------------


def test_qa_rework_and_retest_tasks_need_their_own_attestation(new_world: NewWorld) -> None:
    world = new_world(encode(spec_document()))
    scheduler = started(world)
    finish(world, scheduler, "build")
    finish(world, scheduler, "qa", "## Verdict: FAIL\n## Issues\n- the parser breaks")
    assert world.task("build-fix-1").status is TaskStatus.IN_PROGRESS
    for generated in ("build-fix-1", "qa-retest-1"):
        settle(world, scheduler, generated, "fixed, trust me")
        assert world.task(generated).status is not TaskStatus.DONE
        finish(world, scheduler, generated)
        assert world.task(generated).status is TaskStatus.DONE


def test_copying_a_complete_attestation_to_another_task_does_not_attest_it(
    world: RuntimeWorld, ops: SquadOperations
) -> None:
    world.attest("design")
    world.write_file(world.ledger_file("build"), world.read_file(world.ledger_file("design")))
    unchanged(
        world, ErrorCode.ATTESTATION_INVALID, lambda: ops.complete_task(world.squad_id, "build")
    )


# -- reserved task ids (red-team issue 11, finding 6) --------------------------------------------


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
