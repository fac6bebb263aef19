"""The attacks of a child that has tools (issue 11), refused without kernel isolation.

Every attack runs twice: against the in-memory ``FileSystem`` fake with fake locks, and on the
real file system. Without isolation a child can write any file; what must still hold is that
nothing it writes is *accepted*: settlement, ``complete_task``, review, reconcile and ``verify``
all refuse an attestation the parent did not observe being earned, and a task set with a gap
fails closed. (With isolation the writes themselves fail: tests/e2e/trust_boundary/.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from application.spec_reads import AttestationStatus
from application.squads.drive import drive_squad
from application.squads.operations import SquadOperations
from application.squads.review import ReviewRecorder
from application.squads.scheduler import Scheduler
from application.squads.verify import audit_squad
from domain.errors import ErrorCode, PiSquadError, SquadIntegrityError
from domain.squad.model import SquadStatus, TaskStatus, Verdict
from tests.integration.ops_support import (
    CHAIN_SPEC,
    EVIDENCE,
    PASS_REPORT,
    operations,
    recorder,
)
from tests.runtime_world import RuntimeWorld, make_world


@pytest.fixture(params=["memory-fs", "disk"])
def world(request: pytest.FixtureRequest, tmp_path: Path) -> RuntimeWorld:
    """The file store itself, over the in-memory file system and over the real one: these
    attacks write the store's own files."""
    built = make_world(request.param, tmp_path, CHAIN_SPEC)
    built.publish()
    return built


def write(world: RuntimeWorld, path: str, data: bytes) -> None:
    world.fs.write_atomic(path, data)


def records(world: RuntimeWorld, task_id: str, name: str = "task.json") -> str:
    return f"{world.root}/{world.squad_id}/.records/{task_id}/{name}"


def honest_design(world: RuntimeWorld, scheduler: Scheduler) -> None:
    """design's child reads everything while the parent watches, reports and is accepted."""
    world.attest("design")
    child = world.runtime.latest("design")
    child.say(PASS_REPORT)
    child.settle()
    scheduler.pump()
    assert world.task("design").status is TaskStatus.DONE


def copy_attestation(world: RuntimeWorld, source: str, target: str) -> None:
    """What ``cp`` plus a one-field edit does: the source's proof, relabelled."""
    document = json.loads(world.read_file(world.ledger_file(source)))
    document["taskId"] = target
    write(world, world.ledger_file(target), (json.dumps(document, indent=2) + "\n").encode())


def started(world: RuntimeWorld) -> tuple[Scheduler, SquadOperations]:
    scheduler = world.scheduler()
    scheduler.reconcile()
    honest_design(world, scheduler)
    scheduler.reconcile()  # build and docs start; each reports its session, as Pi does
    for task_id in ("build", "docs"):
        session = f"{world.root}/{world.squad_id}/{task_id}/session/{task_id}.jsonl"
        world.runtime.latest(task_id).bind(session)
    scheduler.pump()
    return scheduler, operations(world)


def refused(call: Any, code: ErrorCode) -> str:
    with pytest.raises(PiSquadError) as caught:
        call()
    assert caught.value.code is code, caught.value.message
    return caught.value.message


# -- a copied attestation -------------------------------------------------------------------------


def test_a_sibling_attestation_copied_into_a_task_is_refused_by_settlement(
    world: RuntimeWorld,
) -> None:
    scheduler, _ops = started(world)
    copy_attestation(world, "design", "build")
    build = world.runtime.latest("build")
    build.say("All done, nothing to see.")  # prose, zero tool calls
    build.settle(tool_calls=0)
    scheduler.pump()
    task = world.task("build")
    assert task.status is not TaskStatus.DONE
    assert len(world.runtime.for_task("build")) == 2, "rejected, then resumed to read"
    rejection = [
        m.text for m in world.store.messages(world.squad_id, "build") if "rejected" in m.text
    ]
    assert len(rejection) == 1
    assert "not grounded in what the parent observed" in rejection[0]
    assert "chunks[0].toolCallId 'design-0'" in rejection[0]
    # The copy is kept for audit under another name; build's next child reads everything again.
    assert not world.fs.exists(world.ledger_file("build"))
    set_aside = [
        n for n in world.fs.list_dir(f"{world.root}/{world.squad_id}/build") if ".ungrounded-" in n
    ]
    assert len(set_aside) == 1
    assert world.attestation("build").status is AttestationStatus.MISSING
    world.attest("build")
    world.runtime.latest("build").say(PASS_REPORT)
    world.runtime.latest("build").settle()
    scheduler.pump()
    assert world.task("build").status is TaskStatus.DONE, "the honest reread is accepted"


def test_a_copied_attestation_is_refused_by_complete_task_verify_and_reconcile(
    world: RuntimeWorld,
) -> None:
    scheduler, ops = started(world)
    copy_attestation(world, "design", "docs")
    message = refused(
        lambda: ops.complete_task(world.squad_id, "docs"), ErrorCode.ATTESTATION_INVALID
    )
    assert "not grounded" in message
    assert world.task("docs").status is TaskStatus.IN_PROGRESS, "nothing changed"
    audit = audit_squad(world.auditor, world.squad_id)
    docs = next(t for t in audit.tasks if t.task_id == "docs")
    assert docs.attestation is AttestationStatus.INVALID
    # A child that also rewrote its own task record as done is reopened by the next audit.
    with world.store.transaction(world.squad_id) as tx:
        tx.put_task(attrs.evolve(tx.tasks["docs"], status=TaskStatus.DONE, output="forged"))
    assert not audit_squad(world.auditor, world.squad_id).passed
    scheduler.reconcile()
    assert world.task("docs").status is not TaskStatus.DONE


def test_copying_the_parents_observations_too_does_not_ground_a_sibling(
    world: RuntimeWorld,
) -> None:
    """Without isolation a child could also copy design's observation record; those reads were
    observed in design's session, not build's, so they still ground nothing for build."""
    _scheduler, ops = started(world)
    copy_attestation(world, "design", "build")
    write(
        world,
        records(world, "build", "observed.jsonl"),
        world.read_file(records(world, "design", "observed.jsonl")),
    )
    message = refused(
        lambda: ops.complete_task(world.squad_id, "build"), ErrorCode.ATTESTATION_INVALID
    )
    assert (
        "is not a squad_spec_read delivery the parent observed in this task's own session"
        in message
    )


# -- a hand-forged attestation --------------------------------------------------------------------


def test_a_hand_written_attestation_with_invented_calls_and_old_times_is_refused(
    world: RuntimeWorld,
) -> None:
    scheduler, ops = started(world)
    document = json.loads(world.read_file(world.ledger_file("design")))
    document["taskId"] = "build"
    for chunk in document["chunks"]:
        chunk["toolCallId"] = f"call_invented_{chunk['index']}"
        chunk["deliveredAt"] = "2020-01-01T00:00:00.000Z"
    document["completedAt"] = "2020-01-01T00:00:01.000Z"
    write(world, world.ledger_file("build"), json.dumps(document).encode())
    message = refused(
        lambda: ops.complete_task(world.squad_id, "build"), ErrorCode.ATTESTATION_INVALID
    )
    assert "before the task's first spawn" in message
    build = world.runtime.latest("build")
    build.settle(tool_calls=0)
    scheduler.pump()
    assert world.task("build").status is not TaskStatus.DONE
    texts = [m.text for m in world.store.messages(world.squad_id, "build")]
    assert any("before the task's first spawn" in text for text in texts)


# -- an impersonated bridge -----------------------------------------------------------------------


def test_a_bridge_started_as_a_never_spawned_task_commits_nothing_the_parent_accepts(
    world: RuntimeWorld,
) -> None:
    """qa was never spawned (blocked): a child role started with qa's environment and fed
    fabricated ``message_end`` events writes a ledger-valid attestation that proves nothing."""
    _scheduler, ops = started(world)
    world.attest("qa")  # the child role commits; no child of the parent streamed these reads
    snapshot = world.store.snapshot(world.squad_id)
    ledger_check = world.auditor.ledger(snapshot.squad, "qa").audit()
    assert ledger_check.status is AttestationStatus.VALID, "the forgery is well-formed"
    assert world.attestation("qa").status is AttestationStatus.INVALID
    message = refused(
        lambda: ops.complete_task(world.squad_id, "qa"), ErrorCode.ATTESTATION_INVALID
    )
    assert "no record of starting a child for this task" in message


# -- review revalidates grounding -----------------------------------------------------------------


def test_review_refuses_and_reopens_work_whose_attestation_was_swapped(world: RuntimeWorld) -> None:
    scheduler = world.scheduler()
    scheduler.reconcile()
    for task_id in ("design", "build", "docs", "qa"):
        world.attest(task_id)
        child = world.runtime.latest(task_id)
        child.say(PASS_REPORT)
        child.settle()
        scheduler.pump()
    assert world.store.snapshot(world.squad_id).squad.status is SquadStatus.REVIEW
    copy_attestation(world, "design", "docs")  # swapped after acceptance
    reviews: ReviewRecorder = recorder(world)
    refused(
        lambda: reviews.record_review(world.squad_id, Verdict.PASS, **EVIDENCE),
        ErrorCode.ATTESTATION_INVALID,
    )
    assert world.task("docs").status is not TaskStatus.DONE
    assert world.store.snapshot(world.squad_id).squad.status is not SquadStatus.DONE


# -- the pinned task set --------------------------------------------------------------------------


def delete_task(world: RuntimeWorld, task_id: str) -> None:
    world.fs.remove_tree(f"{world.root}/{world.squad_id}/{task_id}")
    world.fs.remove_tree(f"{world.root}/{world.squad_id}/.records/{task_id}")


@pytest.mark.parametrize("what", ["ledger directory", "records", "task.json"])
def test_a_pinned_task_whose_records_are_gone_fails_closed_everywhere(
    world: RuntimeWorld, what: str
) -> None:
    scheduler, ops = started(world)
    if what == "ledger directory":
        world.fs.remove_tree(f"{world.root}/{world.squad_id}/build")
    elif what == "records":
        world.fs.remove_tree(f"{world.root}/{world.squad_id}/.records/build")
    else:
        world.fs.remove_file(records(world, "build"))
    refused(lambda: world.store.snapshot(world.squad_id), ErrorCode.SQUAD_INTEGRITY)
    refused(lambda: audit_squad(world.auditor, world.squad_id), ErrorCode.SQUAD_INTEGRITY)
    refused(lambda: ops.complete_task(world.squad_id, "docs"), ErrorCode.SQUAD_INTEGRITY)
    scheduler.reconcile()
    squad_record = json.loads(world.read_file(f"{world.root}/{world.squad_id}/squad.json"))
    assert "Task records failed the integrity check" in squad_record["quarantine"]
    assert "'build'" in squad_record["quarantine"]
    assert world.runtime.live_task_ids() == [], "every child was stopped"
    assert any(n.kind == "quarantine" for n in world.notices)


def test_deleting_every_task_never_reaches_review(world: RuntimeWorld) -> None:
    scheduler = world.scheduler()
    for task_id in ("design", "build", "docs", "qa"):
        delete_task(world, task_id)
    scheduler.reconcile()
    squad_record = json.loads(world.read_file(f"{world.root}/{world.squad_id}/squad.json"))
    assert squad_record["status"] == "running"
    assert squad_record["quarantine"] is not None
    reviews = recorder(world)
    refused(
        lambda: reviews.record_review(world.squad_id, Verdict.PASS, **EVIDENCE),
        ErrorCode.SQUAD_INTEGRITY,
    )


def test_a_record_that_names_another_task_is_an_integrity_failure(world: RuntimeWorld) -> None:
    write(world, records(world, "build"), world.read_file(records(world, "docs")))
    message = refused(lambda: world.store.snapshot(world.squad_id), ErrorCode.SQUAD_INTEGRITY)
    assert "the record of task 'build' names another task" in message


def test_unpinning_a_spec_task_in_squad_json_quarantines_the_squad(world: RuntimeWorld) -> None:
    """The spec's own tasks stay pinned: a squad.json edited to forget one (and its records
    deleted) fails the integrity pass against the canonical spec."""
    scheduler = world.scheduler()
    path = f"{world.root}/{world.squad_id}/squad.json"
    document = json.loads(world.read_file(path))
    document["taskIds"] = [t for t in document["taskIds"] if t != "qa"]
    write(world, path, json.dumps(document).encode())
    delete_task(world, "qa")
    scheduler.reconcile()
    squad = world.store.snapshot(world.squad_id).squad
    assert squad.quarantine is not None
    assert "missing from the squad's pinned task set (first: 'qa')" in squad.quarantine
    assert world.runtime.live_task_ids() == []
    audit = audit_squad(world.auditor, world.squad_id)
    assert not audit.passed


def test_an_unpinned_directory_is_not_a_task(world: RuntimeWorld) -> None:
    """A directory nobody recorded (a child's own mkdir) adds no task."""
    world.fs.make_dir_exclusive(f"{world.root}/{world.squad_id}/intruder", 0o700)
    write(
        world,
        f"{world.root}/{world.squad_id}/intruder/task.json",
        world.read_file(records(world, "qa")),
    )
    assert sorted(world.store.snapshot(world.squad_id).tasks) == ["build", "design", "docs", "qa"]


def test_a_squad_json_without_a_pinned_task_set_is_refused(world: RuntimeWorld) -> None:
    path = f"{world.root}/{world.squad_id}/squad.json"
    document = json.loads(world.read_file(path))
    del document["taskIds"]
    write(world, path, json.dumps(document).encode())
    with pytest.raises(ValueError, match="no taskIds"):
        world.store.snapshot(world.squad_id)


def test_a_driver_that_finds_a_record_gone_quarantines_before_it_stops(
    world: RuntimeWorld,
) -> None:
    """The drive loop's own read can be the one that finds the gap: the quarantine is
    recorded and every child stopped before the coded error reaches the caller."""
    scheduler = world.scheduler()

    def delete_on_first_progress(_snapshot: object) -> None:
        delete_task(world, "docs")

    with pytest.raises(SquadIntegrityError):
        drive_squad(
            scheduler,
            store=world.store,
            locks=world.locks,
            poll_seconds=0.0,
            on_progress=delete_on_first_progress,
        )
    squad_record = json.loads(world.read_file(f"{world.root}/{world.squad_id}/squad.json"))
    assert "Task records failed the integrity check" in squad_record["quarantine"]
    assert all(child.killed or child.finished for child in world.runtime.spawned)
    assert scheduler.live == {}
