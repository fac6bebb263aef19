"""Issue 13 item 4 on fakes: the monitor in a running scheduler, on a fake clock and fake
children, on the in-memory and the file store. Every action lands in the task's history and on
its record, and status shows it."""

from __future__ import annotations

from domain.squad.model import SquadStatus, TaskStatus
from domain.squad.monitor import STEER_PREFIX, MonitorPolicy
from tests.integration.ops_support import squad_status, status_reader
from tests.runtime_world import RuntimeWorld

POLICY = MonitorPolicy(repeat_limit=5, idle_steer=180.0, idle_escalate=360.0, ceiling=900.0)


def history(world: RuntimeWorld, task_id: str) -> list[str]:
    return [m.text for m in world.store.messages(world.squad_id, task_id)]


def test_a_child_repeating_one_call_is_steered_and_status_shows_it(world: RuntimeWorld) -> None:
    scheduler = world.scheduler_for(world.squad_id, monitor_policy=POLICY)
    scheduler.reconcile()
    child = world.runtime.latest("design")
    for _ in range(5):
        child.call_tool("bash", {"command": "cat notes.txt"})
    scheduler.pump()
    (steer,) = child.steers
    assert steer.startswith(STEER_PREFIX)
    assert "bash call 5 times" in steer
    assert world.task("design").monitor == "steered (repeated_call)"
    assert "monitor: steered (repeated_call)" in history(world, "design")
    text = status_reader(world).status(world.squad_id).text()
    assert "    monitor: steered (repeated_call)" in text.splitlines()


def test_a_quiet_child_is_steered_then_the_orchestrator_told(world: RuntimeWorld) -> None:
    scheduler = world.scheduler_for(world.squad_id, monitor_policy=POLICY)
    scheduler.reconcile()
    child = world.runtime.latest("design")
    child.say("thinking")
    scheduler.pump()
    world.clock.advance(181)
    scheduler.pump()
    assert len(child.steers) == 1
    assert world.notices == []
    world.clock.advance(180)
    scheduler.pump()
    (escalation,) = [n for n in world.notices if n.kind == "escalation"]
    assert escalation.task_id == "design"
    monitor = world.task("design").monitor
    assert monitor is not None
    assert monitor.startswith("escalated (idle_escalation)")
    assert world.task("design").status is TaskStatus.IN_PROGRESS, "told, not stopped"


def test_a_child_past_its_runtime_ceiling_is_stopped_and_its_task_fails(
    world: RuntimeWorld,
) -> None:
    scheduler = world.scheduler_for(world.squad_id, monitor_policy=POLICY)
    scheduler.reconcile()
    child = world.runtime.latest("design")
    for _ in range(10):  # busy all along: the ceiling is about time, not quiet
        world.clock.advance(90)
        child.say("still working")
        scheduler.pump()
    assert child.killed
    design = world.task("design")
    assert design.status is TaskStatus.FAILED
    assert design.error is not None
    assert design.error.startswith("runtime ceiling reached")
    assert [n.kind for n in world.notices][:1] == ["task_failed"]
    child.exit(137, "killed")  # the stopped child's exit changes nothing more
    scheduler.pump()
    assert world.task("design").status is TaskStatus.FAILED
    assert len(world.runtime.for_task("design")) == 1, "never retried"
    assert squad_status(world) is SquadStatus.FAILED
