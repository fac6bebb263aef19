"""The planner child on its ``ChildSession`` (fake runtime, fake clock, recorded temporary
directories): its last words are the plan; an exit, silence or its timeout fail planning; the
child is killed and its session directory removed however planning ends."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from application.ports import NewSession
from application.squads.planner import PlannerFailed, PlannerSettings, run_planner
from domain.agents import AgentCatalog
from domain.child_environment import CHILD_FLAG
from domain.errors import ErrorCode
from tests.fakes.child_runtime import FakeChild, FakeChildRuntime
from tests.fakes.clock import FakeClock
from tests.fakes.temp_dirs import RecordingTempDirs

PLAN = '```json\n{"tasks": [{"id": "a", "title": "A", "agent": "docs"}]}\n```'


class Planning:
    def __init__(self, script: Callable[[FakeChild, FakeClock], None]) -> None:
        self.clock = FakeClock()
        self.temp_dirs = RecordingTempDirs()
        self.runtime = FakeChildRuntime(on_spawn=lambda child: script(child, self.clock))

    def plan(self) -> dict[str, Any]:
        return run_planner(
            self.runtime,
            goal="g",
            catalog=AgentCatalog(),
            cwd="/project",
            clock=self.clock,
            temp_dirs=self.temp_dirs,
            settings=PlannerSettings(timeout_seconds=60),
        )

    def failure(self) -> str:
        with pytest.raises(PlannerFailed) as caught:
            self.plan()
        assert caught.value.code is ErrorCode.PLAN_INVALID
        (child,) = self.runtime.spawned
        assert child.killed
        assert self.temp_dirs.opened
        assert self.temp_dirs.live == []
        return str(caught.value)


def test_the_last_words_before_settling_are_the_plan() -> None:
    def answer(child: FakeChild, _clock: FakeClock) -> None:
        child.say("Let me think.")
        child.say(f"Here:\n{PLAN}")
        child.say("   ")
        child.settle()

    planning = Planning(answer)
    assert planning.plan()["tasks"][0]["id"] == "a"
    (child,) = planning.runtime.spawned
    assert child.killed
    request = child.request
    assert "Goal:\ng" in request.first_prompt
    assert dict(request.environment) == {CHILD_FLAG: "1"}
    assert request.session == NewSession(planning.temp_dirs.opened[0])
    assert planning.temp_dirs.opened[0].rsplit("/", 1)[1].startswith("pi-squad-planner-")
    assert planning.temp_dirs.live == []


def test_a_planner_that_exits_fails_planning() -> None:
    planning = Planning(lambda child, _clock: child.exit(3, "boom"))
    assert "the planner exited (code 3)" in planning.failure()


def test_a_planner_that_settles_without_a_word_fails_planning() -> None:
    planning = Planning(lambda child, _clock: child.settle())
    assert "the planner said nothing" in planning.failure()


def test_a_planner_still_working_at_its_timeout_fails_planning() -> None:
    def stall(child: FakeChild, clock: FakeClock) -> None:
        child.say("Still thinking...")
        clock.advance(61)

    planning = Planning(stall)
    assert "the planner timed out" in planning.failure()
