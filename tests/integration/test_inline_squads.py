"""Legacy inline squads (issue 5 item 8) and one driver per squad (issue 5 tests)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adapters.catalogue.agent_files import FileAgentDirectory
from adapters.store.json_records import JsonSquadCodec
from application.ports import NewSession
from application.squads.create_squad import Publisher, publish_inline_squad
from application.squads.drive import drive_squad
from application.squads.planner import PlannerFailed, extract_plan, run_planner
from application.squads.squad_call import DEFAULT_CONFIG, inline_tasks
from domain.errors import ErrorCode, SquadOperationError
from domain.squad.model import SquadStatus, TaskStatus
from tests.builders import encode, spec_document
from tests.fakes.child_runtime import FakeChild
from tests.runtime_world import RuntimeWorld


def _publish_inline(world: RuntimeWorld, raw_tasks: tuple[dict[str, object], ...]) -> str:
    catalog = FileAgentDirectory(world.root).catalog(world.cwd)
    tasks, _notes = inline_tasks(raw_tasks, catalog, now=world.clock.now())
    publisher = Publisher(
        fs=world.fs,
        locks=world.locks,
        clock=world.clock,
        ids=world.ids,
        codec=JsonSquadCodec(),
        squad_root=world.root,
    )
    published = publish_inline_squad(
        publisher, goal="Say hello", tasks=tasks, agents=(), config=DEFAULT_CONFIG, cwd=world.cwd
    )
    return published.squad.id


@pytest.fixture
def world(tmp_path: Path) -> RuntimeWorld:
    world = RuntimeWorld(base=tmp_path, spec=encode(spec_document()))
    Path(world.cwd).mkdir(parents=True)
    return world


def test_inline_squad_runs_with_no_spec_environment_and_no_attestation(world: RuntimeWorld) -> None:
    squad_id = _publish_inline(
        world,
        (
            {"id": "hello", "title": "Say hello", "agent": "docs", "description": "Say hi."},
            {"id": "check", "title": "Check", "agent": "designer", "depends": ["hello"]},
        ),
    )
    world.published = None
    snapshot = world.store.snapshot(squad_id)
    assert snapshot.squad.spec is None
    assert snapshot.tasks["check"].agent == "fullstack", "unknown inline agents are remapped"
    assert snapshot.tasks["check"].description.startswith('[Note: agent "designer" not found')
    scheduler = world.scheduler_for(squad_id)
    scheduler.reconcile()
    child = world.runtime.latest("hello")
    assert child.request.environment == {"PI_SQUAD_CHILD": "1"}
    assert "Say hi." in child.request.first_prompt, "inline prompts keep the task text"
    child.say("Hello!")
    child.settle()
    scheduler.pump()
    assert world.store.snapshot(squad_id).tasks["hello"].status is TaskStatus.DONE
    check = world.runtime.latest("check")
    check.say("Checked.")
    check.settle()
    scheduler.pump()
    assert world.store.snapshot(squad_id).squad.status is SquadStatus.REVIEW
    assert not (Path(world.root) / squad_id / "hello" / "spec-read-state.json").exists()


def plan_for_goal_g(world: RuntimeWorld) -> dict[str, Any]:
    """The plan the world's planner child answers for the goal "g" with the project's agents."""
    return run_planner(
        world.runtime,
        goal="g",
        catalog=FileAgentDirectory(world.root).catalog(world.cwd),
        cwd=world.cwd,
        clock=world.clock,
        temp_dirs=world.temp_dirs,
    )


def test_planner_reply_with_a_fenced_plan_is_decoded(world: RuntimeWorld) -> None:
    def answer(child: FakeChild) -> None:
        child.say('Here:\n```json\n{"tasks": [{"id": "a", "title": "A", "agent": "docs"}]}\n```')
        child.settle()

    world.runtime.on_spawn = answer
    plan = plan_for_goal_g(world)
    assert plan["tasks"][0]["id"] == "a"
    request = world.runtime.spawned[0].request
    assert "Goal:\ng" in request.first_prompt
    assert world.runtime.spawned[0].killed
    # the planner's session lives in a temporary directory, removed once planning ends
    assert request.session == NewSession(world.temp_dirs.opened[0])
    assert world.temp_dirs.opened[0].rsplit("/", 1)[1].startswith("pi-squad-planner-")
    assert world.temp_dirs.live == []


def test_planner_that_exits_fails_the_plan(world: RuntimeWorld) -> None:
    world.runtime.on_spawn = lambda child: child.exit(1, "boom")
    with pytest.raises(PlannerFailed) as caught:
        plan_for_goal_g(world)
    assert caught.value.code is ErrorCode.PLAN_INVALID
    assert world.temp_dirs.opened
    assert world.temp_dirs.live == []


def test_plan_extraction_needs_a_json_object() -> None:
    assert extract_plan('text {"tasks": []} more') == {"tasks": []}
    with pytest.raises(Exception, match="no JSON plan"):
        extract_plan("no plan here")


def test_a_second_driver_of_the_same_squad_is_refused(tmp_path: Path) -> None:
    world = RuntimeWorld(base=tmp_path, spec=encode(spec_document()))
    world.publish()
    first = world.scheduler()
    second = world.scheduler()
    lock = Path(world.root) / world.squad_id / ".driver.lock"
    with world.locks.try_lock(str(lock)) as taken:
        assert taken, "the first driver holds the squad"
        with pytest.raises(SquadOperationError) as caught:
            drive_squad(second, store=world.store, locks=world.locks)
        assert caught.value.code is ErrorCode.SQUAD_BUSY
    assert world.runtime.spawned == [], "the refused driver spawned nothing"
    del first
