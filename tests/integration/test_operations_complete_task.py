"""squad_modify ``complete_task`` and the attestation each completed task needs, generated QA work
included."""

from __future__ import annotations

from application.squads.operations import MARKED_DONE_OUTPUT, SquadOperations
from domain.errors import ErrorCode
from domain.squad.model import SquadStatus, TaskStatus
from tests.builders import encode, spec_document
from tests.integration.ops_support import (
    NewWorld,
    assert_running_again,
    fail_task,
    finish,
    publish_legacy,
    refused,
    settle,
    squad_status,
    statuses,
    tamper,
    unchanged,
)
from tests.integration.scheduler_steps import started
from tests.runtime_world import RuntimeWorld


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
