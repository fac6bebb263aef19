"""Contract §10 and upstream §4 against a fake child runtime, on the in-memory store and on a
real squad root (the ``world`` fixture of tests/integration/conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path

from application.ports import NewSession, ResumeSession
from domain.squad.model import SquadStatus, TaskStatus
from tests.builders import encode, spec_document, task
from tests.integration.ops_support import (
    NewWorld,
    finish,
    run_to_review,
    settle,
    tamper,
    touch_canonical,
)
from tests.integration.scheduler_steps import resumed_session_file, started
from tests.runtime_world import RuntimeWorld
from tests.squads import multi_chunk_spec


def test_ready_tasks_spawn_in_dependency_order_with_the_child_environment(
    world: RuntimeWorld,
) -> None:
    started(world)
    assert world.runtime.live_task_ids() == ["design"]
    request = world.runtime.latest("design").request
    spec = world.published.squad.spec if world.published else None
    assert spec is not None
    assert request.environment == {
        "PI_SQUAD_CHILD": "1",
        "PI_SQUAD_ID": world.squad_id,
        "PI_SQUAD_TASK_ID": "design",
        "PI_SQUAD_SPEC_PATH": spec.path,
        "PI_SQUAD_SPEC_SHA256": spec.sha256,
        "PI_SQUAD_SPEC_BYTES": str(spec.bytes),
        "PI_SQUAD_SPEC_CHUNK_BYTES": "32768",
    }
    assert isinstance(request.session, NewSession)
    assert request.session.session_dir.endswith(f"{world.squad_id}/design/session")
    assert request.cwd == world.cwd
    assert world.task("design").status is TaskStatus.IN_PROGRESS


def test_file_mode_prompts_never_inline_spec_fields(world: RuntimeWorld) -> None:
    world.scheduler().reconcile()
    request = world.runtime.latest("design").request
    for text in (request.system_prompt, request.first_prompt):
        assert "Ship a tested feature" not in text
        assert "Task design" not in text
        assert "run the tests to verify" not in text
    assert "squad_spec_read" in request.first_prompt


def test_settlement_without_attestation_is_rejected_and_reopens_the_same_session(
    world: RuntimeWorld,
) -> None:
    scheduler = started(world)
    child = world.runtime.latest("design")
    child.bind(world.session_of("design"))
    child.say("All done, trust me.")
    child.settle()
    scheduler.pump()
    design = world.task("design")
    assert design.status is TaskStatus.IN_PROGRESS, "respawned at once on the same session"
    assert design.completed is None
    assert design.output is None
    history = world.store.messages(world.squad_id, "design")
    reasons = [m.text for m in history if m.text.startswith("Completion rejected")]
    assert len(reasons) == 1, "the rejection is a durable status reason"
    assert world.task("build").status is TaskStatus.BLOCKED
    second = world.runtime.latest("design")
    assert second is not child
    assert resumed_session_file(second) == world.session_of("design")
    assert "Completion rejected" in second.request.first_prompt


def test_repeated_settlement_without_attestation_never_yields_done(world: RuntimeWorld) -> None:
    scheduler = started(world)
    for _ in range(6):
        settle(world, scheduler, "design", "done")
        assert world.task("design").status is not TaskStatus.DONE
    design = world.task("design")
    assert design.status is TaskStatus.SUSPENDED
    assert design.error is not None
    assert design.error.startswith("Attestation rejected 3x")
    assert [n.kind for n in world.notices].count("escalation") == 1
    assert len(world.runtime.for_task("design")) == 3


def test_attested_settlement_is_accepted_and_unblocks_dependents(world: RuntimeWorld) -> None:
    scheduler = started(world)
    finish(world, scheduler, "design", "Design written to docs/DESIGN.md")
    design = world.task("design")
    assert design.status is TaskStatus.DONE
    assert design.output == "Design written to docs/DESIGN.md"
    assert design.completed is not None
    assert sorted(world.runtime.live_task_ids()) == ["build", "docs"]


def test_max_concurrency_bounds_live_children(new_world: NewWorld) -> None:
    document = spec_document(
        tasks=[task(f"t{i}") for i in range(5)],
        config={"maxConcurrency": 2, "autoUnblock": True, "maxRetries": 2},
    )
    world = new_world(encode(document))
    scheduler = started(world)
    assert len(world.runtime.live_task_ids()) == 2
    finish(world, scheduler, "t0")
    assert len(world.runtime.live_task_ids()) == 2
    assert "t2" in world.runtime.live_task_ids()


def test_all_done_enters_review_never_done(world: RuntimeWorld) -> None:
    run_to_review(world)
    squad = world.store.snapshot(world.squad_id).squad
    assert squad.status is SquadStatus.REVIEW
    assert squad.review is not None
    assert [n.kind for n in world.notices] == ["review_required"]
    gate = world.notices[0].text
    assert "Ship a tested feature" not in gate
    assert "Task design" not in gate


def test_tampered_attestation_after_done_reopens_task_and_reblocks_descendants(
    world: RuntimeWorld,
) -> None:
    run_to_review(world)
    tamper(world, "design")
    started(world)
    assert world.task("design").status is TaskStatus.IN_PROGRESS
    for descendant in ("build", "docs", "qa"):
        task_record = world.task(descendant)
        assert task_record.status is TaskStatus.BLOCKED
        assert task_record.completed is None
    squad = world.store.snapshot(world.squad_id).squad
    assert squad.status is SquadStatus.RUNNING
    assert squad.review is None
    assert len(squad.review_history) == 1


def test_deleted_attestation_is_found_by_a_restarted_parent(world: RuntimeWorld) -> None:
    scheduler = started(world)
    finish(world, scheduler, "design")
    world.remove_file(world.ledger_file("design"))
    world.scheduler().reconcile()
    assert world.task("design").status is not TaskStatus.DONE


def test_parent_restart_resumes_in_progress_work_on_the_same_session(world: RuntimeWorld) -> None:
    first = world.scheduler()
    first.reconcile()
    world.runtime.latest("design").bind(world.session_of("design", "d"))
    first.pump()
    # The parent dies: its children die with it, nothing else is written.
    second = world.scheduler()
    second.reconcile()
    spawned = world.runtime.for_task("design")
    assert len(spawned) == 2
    assert isinstance(spawned[1].request.session, ResumeSession)
    assert world.task("design").status is TaskStatus.IN_PROGRESS
    finish(world, second, "design")
    assert world.task("design").status is TaskStatus.DONE
    assert len(world.runtime.for_task("design")) == 2, "no duplicate work"


def test_unexpected_exit_is_retried_with_backoff_then_fails(world: RuntimeWorld) -> None:
    scheduler = started(world)
    world.runtime.latest("design").exit(1, "segfault")
    scheduler.pump()
    assert world.task("design").status is TaskStatus.PENDING
    assert len(world.runtime.for_task("design")) == 1, "backoff holds the retry"
    world.clock.advance(2.5)
    scheduler.reconcile()
    assert len(world.runtime.for_task("design")) == 2
    world.runtime.latest("design").exit(1, "segfault")
    scheduler.pump()
    world.clock.advance(11)
    scheduler.reconcile()
    world.runtime.latest("design").exit(1, "segfault again")
    scheduler.pump()
    design = world.task("design")
    assert design.status is TaskStatus.FAILED
    assert design.error is not None
    assert "resume_task" in design.error
    assert "segfault again" in design.error


def test_events_from_a_replaced_child_are_ignored(world: RuntimeWorld) -> None:
    scheduler = started(world)
    old = world.runtime.latest("design")
    old.exit(1, "x")
    scheduler.pump()
    world.clock.advance(3)
    scheduler.reconcile()
    world.attest("design")
    old.say("stale report")
    old.settle()
    scheduler.pump()
    assert world.task("design").status is TaskStatus.IN_PROGRESS


def test_canonical_change_quarantines_the_squad(world: RuntimeWorld) -> None:
    scheduler = started(world)
    finish(world, scheduler, "design")
    touch_canonical(world)
    spawned = len(world.runtime.spawned)
    scheduler.reconcile()
    squad = world.store.snapshot(world.squad_id).squad
    assert squad.quarantine is not None
    assert world.task("design").status is TaskStatus.PENDING
    assert world.runtime.live_task_ids() == []
    assert scheduler.live == {}
    scheduler.reconcile()
    assert len(world.runtime.spawned) == spawned


def test_tools_allowlist_gets_the_reader_added(new_world: NewWorld, tmp_path: Path) -> None:
    # Agent files are read from the real disk in every world kind.
    agents_dir = Path(tmp_path, "project", ".pi", "squad", "agents")
    agents_dir.mkdir(parents=True)
    (agents_dir / "architect.json").write_text(
        json.dumps(
            {
                "name": "architect",
                "role": "Architect",
                "description": "d",
                "prompt": "p",
                "tools": ["read", "bash"],
            }
        )
    )
    world = new_world()
    world.scheduler().reconcile()
    assert world.runtime.latest("design").request.tools == ("read", "bash", "squad_spec_read")


def test_multi_chunk_spec_task_is_accepted_only_after_every_chunk(new_world: NewWorld) -> None:
    world = new_world(multi_chunk_spec(4))
    scheduler = started(world)
    finish(world, scheduler, "design")
    assert world.task("design").status is TaskStatus.DONE


def test_a_spec_directory_swapped_for_a_symlink_quarantines_the_squad(
    world: RuntimeWorld, tmp_path: Path
) -> None:
    """Red-team issue 11, finding 5: an identical copy reached through a linked ``spec/`` is
    not the squad's canonical file."""
    scheduler = started(world)
    finish(world, scheduler, "design")
    world.link_dir_elsewhere(f"{world.layout().squad_dir}/spec", str(tmp_path / "elsewhere"))

    scheduler.reconcile()

    squad = world.store.snapshot(world.squad_id).squad
    assert squad.quarantine is not None
    assert "is not a real directory" in squad.quarantine
    assert world.task("design").status is TaskStatus.PENDING
    assert world.runtime.live_task_ids() == []
