"""Issue 13 item 4 on fakes: the monitor in a running scheduler, on a fake clock and fake
children, on the in-memory and the file store. Every action lands in the task's history and on
its record, and status shows it."""

from __future__ import annotations

import threading

import attrs

from domain.squad.model import SquadStatus, Task, TaskStatus
from domain.squad.monitor import STEER_PREFIX, MonitorPolicy
from tests.fakes.child_runtime import FakeChild
from tests.integration.ops_support import squad_status, status_reader
from tests.runtime_world import RuntimeWorld

POLICY = MonitorPolicy(repeat_limit=5, idle_steer=180.0, idle_escalate=360.0, ceiling=900.0)


def history(world: RuntimeWorld, task_id: str) -> list[str]:
    return [m.text for m in world.store.messages(world.squad_id, task_id)]


def stopped_and_failed(world: RuntimeWorld, child: FakeChild, error: str) -> Task:
    """``design``, its child stopped and the task failed with an error that starts ``error``."""
    assert child.killed
    design = world.task("design")
    assert design.status is TaskStatus.FAILED
    assert design.error is not None
    assert design.error.startswith(error)
    return design


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
    stopped_and_failed(world, child, "runtime ceiling reached")
    assert [n.kind for n in world.notices][:1] == ["task_failed"]
    child.exit(137, "killed")  # the stopped child's exit changes nothing more
    scheduler.pump()
    assert world.task("design").status is TaskStatus.FAILED
    assert len(world.runtime.for_task("design")) == 1, "never retried"
    assert squad_status(world) is SquadStatus.FAILED


def test_a_child_streaming_one_message_past_its_bound_is_stopped_and_its_task_fails(
    world: RuntimeWorld,
) -> None:
    """A single tool argument of megabytes stalls Pi for minutes: the child is stopped as soon
    as the message it streams passes the bound, and status says why."""
    policy = attrs.evolve(POLICY, message_bytes=64 * 1024)
    scheduler = world.scheduler_for(world.squad_id, monitor_policy=policy)
    scheduler.reconcile()
    child = world.runtime.latest("design")
    assert child.request.observe_output, "a squad child's streaming is counted"
    for size in (16 * 1024, 64 * 1024):
        child.stream(size)
        scheduler.pump()
    assert world.runtime.latest("design").killed is False  # at the bound: still running
    child.stream(64 * 1024 + 1)
    scheduler.pump()
    design = stopped_and_failed(
        world, child, "message too large: one assistant message streamed 65537"
    )
    assert design.monitor is not None
    assert design.monitor.startswith("stopped (message_size)")
    child.exit(137, "killed")
    scheduler.pump()
    assert len(world.runtime.for_task("design")) == 1, "never retried"


# -- the driver sleeps until the monitor's next deadline (issue 14) ----------------------------
#
# A driver waiting on its children is woken only by their events, a ``wake`` or the scheduler's
# next deadline; these check that the monitor's deadlines are among them, so that an idle child
# is still steered, escalated and stopped on time.


def test_the_next_deadline_is_the_idle_steer_then_the_escalation(world: RuntimeWorld) -> None:
    quick = MonitorPolicy(repeat_limit=5, idle_steer=3.0, idle_escalate=4.0)
    scheduler = world.scheduler_for(world.squad_id, monitor_policy=quick)
    scheduler.reconcile()
    child = world.runtime.latest("design")
    scheduler.pump()  # its watch starts now
    start = world.clock.monotonic()
    assert scheduler.next_deadline() == start + 3.0, "before the 5 s reconcile tick"
    world.clock.advance(3.0)
    assert scheduler.next_deadline() <= world.clock.monotonic()
    assert scheduler.pump(timeout=None) == 0, "due: no wait, the monitor ticks"
    assert len(child.steers) == 1
    assert scheduler.next_deadline() == start + 4.0
    world.clock.advance(1.0)
    scheduler.pump(timeout=None)
    assert [n.kind for n in world.notices] == ["escalation"]
    assert scheduler.next_deadline() == start + 5.0, "escalated: only the reconcile tick is left"


def test_an_event_moves_the_idle_deadline(world: RuntimeWorld) -> None:
    scheduler = world.scheduler_for(world.squad_id, monitor_policy=POLICY)
    scheduler.reconcile()
    child = world.runtime.latest("design")
    scheduler.pump()
    world.clock.advance(179)
    child.say("still here")
    scheduler.pump()
    world.clock.advance(2)
    scheduler.pump()
    assert child.steers == [], "quiet for 2 s only"
    live = scheduler.live["design"]
    assert live.watch is not None
    assert live.watch.last_event_at + 180.0 == world.clock.monotonic() + 178.0


def test_the_ceiling_is_a_deadline_even_for_a_busy_child(world: RuntimeWorld) -> None:
    policy = MonitorPolicy(repeat_limit=5, idle_steer=180.0, idle_escalate=360.0, ceiling=2.0)
    scheduler = world.scheduler_for(world.squad_id, monitor_policy=policy)
    scheduler.reconcile()
    child = world.runtime.latest("design")
    scheduler.pump()
    assert scheduler.next_deadline() == world.clock.monotonic() + 2.0
    world.clock.advance(2.0)
    scheduler.pump(timeout=None)
    assert child.killed


def test_a_pump_sleeping_until_its_deadline_ends_at_a_wake(world: RuntimeWorld) -> None:
    scheduler = world.scheduler_for(world.squad_id, monitor_policy=POLICY)
    scheduler.reconcile()
    scheduler.pump()
    # The fake clock stands still: the wait is the full 5 s to the reconcile tick unless woken.
    assert scheduler.next_deadline() - world.clock.monotonic() == 5.0
    result: list[int] = []
    pumping = threading.Thread(target=lambda: result.append(scheduler.pump(timeout=None)))
    pumping.start()
    scheduler.wake()
    pumping.join(timeout=2.0)
    assert not pumping.is_alive(), "woken, not slept out"
    assert result == [0], "a wake handles nothing"
