"""Issue 13 item 4, the optional advisor of escalations, on fakes: a fake clock, fake children
(the fake runtime records every spawn), the in-memory and the file store. Off by default: no
advisor child ever spawns without the setting. On: one advisor per escalation, told facts and
never spec content, whose sentence is steered into the stuck child and recorded; when it fails
or times out the orchestrator is told as without one, and that is recorded too."""

from __future__ import annotations

from application.squads.scheduler import Scheduler
from domain.squad.advisor import AdvisorSettings
from domain.squad.model import TaskStatus
from domain.squad.monitor import STEER_PREFIX, MonitorPolicy
from tests.fakes.child_runtime import FakeChild
from tests.integration.ops_support import status_reader
from tests.runtime_world import RuntimeWorld

POLICY = MonitorPolicy(repeat_limit=5, idle_steer=180.0, idle_escalate=360.0)
ADVISOR = AdvisorSettings(model="claude-haiku", provider="anthropic", timeout=60.0)
CHILD_SECRET = "the child quoted line 7 of the spec: SPEC-CONTENT-7"


def history(world: RuntimeWorld, task_id: str) -> list[str]:
    return [m.text for m in world.store.messages(world.squad_id, task_id)]


def advisors(world: RuntimeWorld) -> list[FakeChild]:
    """Children the runtime spawned that are no task's worker: the advisors."""
    return [c for c in world.runtime.spawned if c.request.tools == ()]


def escalate(world: RuntimeWorld, scheduler: Scheduler) -> FakeChild:
    """Start the squad, let ``design``'s child say something, then stay quiet past both
    thresholds; returns the stuck child."""
    scheduler.reconcile()
    child = world.runtime.latest("design")
    child.use_tool("bash")
    child.say(CHILD_SECRET)
    scheduler.pump()
    world.clock.advance(181)
    scheduler.pump()
    world.clock.advance(180)
    scheduler.pump()
    return child


def escalated_to_an_advisor(world: RuntimeWorld) -> tuple[Scheduler, FakeChild, FakeChild]:
    """A scheduler with the advisor set whose ``design`` child got stuck (:func:`escalate`); the
    scheduler, the stuck child and the one advisor asked about it."""
    scheduler = world.scheduler_for(world.squad_id, monitor_policy=POLICY, advisor=ADVISOR)
    child = escalate(world, scheduler)
    (advisor,) = advisors(world)
    return scheduler, child, advisor


def answer(advisor: FakeChild, scheduler: Scheduler, text: str) -> None:
    """The advisor says ``text`` and settles; the scheduler handles it."""
    advisor.say(text)
    advisor.settle()
    scheduler.pump()


def stay_quiet_until_escalated(world: RuntimeWorld, scheduler: Scheduler) -> None:
    """No event from the child past the escalation threshold."""
    world.clock.advance(361)
    scheduler.pump()
    world.clock.advance(1)
    scheduler.pump()


def test_without_the_setting_no_advisor_ever_spawns(world: RuntimeWorld) -> None:
    scheduler = world.scheduler_for(world.squad_id, monitor_policy=POLICY)
    escalate(world, scheduler)
    assert advisors(world) == []
    assert [c.task_id for c in world.runtime.spawned] == ["design"]
    assert world.temp_dirs.opened == []
    (escalation,) = [n for n in world.notices if n.kind == "escalation"]
    assert "advisor" not in escalation.text, "today's escalation, unchanged"


def test_an_escalation_asks_one_advisor_and_steers_its_sentence_into_the_child(
    world: RuntimeWorld,
) -> None:
    scheduler, child, advisor = escalated_to_an_advisor(world)
    request = advisor.request
    assert (request.provider, request.model, request.tools) == ("anthropic", "claude-haiku", ())
    assert dict(request.environment) == {"PI_SQUAD_CHILD": "1"}, "no spec environment"
    prompt = request.first_prompt
    assert "Task id: design" in prompt
    assert "Agent: architect" in prompt
    assert "Status: in_progress" in prompt
    assert "the agent started the tool bash" in prompt
    assert "SPEC-CONTENT-7" not in prompt + request.system_prompt, "never what a child wrote"
    assert "Do design and run the tests" not in prompt, "never the task's spec text"
    assert world.notices == [], "the orchestrator is told only if the advisor fails"
    monitor = world.task("design").monitor
    assert monitor == "escalated (idle_escalation): asking the advisor (anthropic/claude-haiku)"
    for _ in range(3):  # still waiting on it: no second advisor for the same escalation
        world.clock.advance(5)
        scheduler.pump()
    assert len(advisors(world)) == 1

    answer(advisor, scheduler, "Run the failing test on its own and read its output. Then report.")
    advice = "Run the failing test on its own and read its output."
    assert child.steers[-1] == f"{STEER_PREFIX} {advice}"
    expected = f"steered by the advisor (idle_escalation): {advice}"
    assert world.task("design").monitor == expected
    assert f"monitor: {expected}" in history(world, "design")
    assert f"    monitor: {expected}" in status_reader(world).status(world.squad_id).text()
    assert world.notices == []
    assert advisor.killed, "short-lived: ended once it answered"
    assert world.temp_dirs.live == [], "its session directory is gone"
    assert world.task("design").status is TaskStatus.IN_PROGRESS

    child.say("on it")  # the child moves, then goes quiet again: a second escalation
    scheduler.pump()
    stay_quiet_until_escalated(world, scheduler)
    assert len(advisors(world)) == 2, "one advisor per escalation"


def test_a_child_that_stays_quiet_after_the_advice_is_reported_to_the_orchestrator(
    world: RuntimeWorld,
) -> None:
    scheduler, child, advisor = escalated_to_an_advisor(world)
    answer(advisor, scheduler, "Re-run the build.")
    assert world.notices == []
    advised = world.clock.monotonic()
    world.clock.advance(179)
    scheduler.pump(timeout=None)
    assert world.notices == []
    # Due before the next reconcile tick: the steer-to-escalation gap after the advice.
    assert scheduler.next_deadline() == advised + 180.0
    world.clock.advance(1)
    scheduler.pump(timeout=None)
    (escalation,) = world.notices
    assert escalation.kind == "escalation"
    assert "not even after the advisor's steer" in escalation.text
    monitor = world.task("design").monitor
    assert monitor is not None
    assert monitor.startswith("escalated (idle_escalation): no event from the child for")
    assert len(advisors(world)) == 1, "told, not advised again"
    world.clock.advance(1000)
    scheduler.pump(timeout=None)
    assert len(world.notices) == 1, "once"
    assert len(child.steers) == 2, "the idle steer and the advice"


def test_a_child_that_moves_after_the_advice_is_not_reported(world: RuntimeWorld) -> None:
    scheduler, child, advisor = escalated_to_an_advisor(world)
    answer(advisor, scheduler, "Re-run the build.")
    world.clock.advance(10)
    child.use_tool("bash")
    scheduler.pump()
    world.clock.advance(175)
    scheduler.pump(timeout=None)
    assert world.notices == []


def test_an_advisors_events_are_never_taken_for_the_tasks_own(world: RuntimeWorld) -> None:
    scheduler, _, advisor = escalated_to_an_advisor(world)
    before = world.task("design")
    advisor.bind("/tmp/advisor-session.jsonl")
    advisor.say("Check the build log first.", tokens=5000, cost=1.0)
    scheduler.pump()
    after = world.task("design")
    assert after.session == before.session, "the advisor's session is not the task's"
    assert after.usage == before.usage
    assert "Check the build log first." not in history(world, "design")


def test_an_advisor_that_exits_falls_back_to_the_escalation_notice(world: RuntimeWorld) -> None:
    scheduler, child, advisor = escalated_to_an_advisor(world)
    advisor.exit(1, "no API key")
    scheduler.pump()
    (escalation,) = [n for n in world.notices if n.kind == "escalation"]
    assert escalation.task_id == "design"
    assert escalation.text.startswith("design: no event from the child for")
    assert escalation.text.endswith("; the advisor failed: the advisor exited (code 1)")
    monitor = world.task("design").monitor
    assert monitor is not None
    assert monitor.startswith("escalated (idle_escalation): no event from the child")
    assert monitor.endswith("the advisor failed: the advisor exited (code 1)")
    assert f"monitor: {monitor}" in history(world, "design")
    assert len(child.steers) == 1, "only the monitor's own idle steer"
    assert world.temp_dirs.live == []


def test_an_advisor_that_times_out_is_stopped_and_the_orchestrator_told(
    world: RuntimeWorld,
) -> None:
    scheduler, _, advisor = escalated_to_an_advisor(world)
    assert scheduler.next_deadline() <= world.clock.monotonic() + 60.0, "its timeout is a deadline"
    world.clock.advance(60)
    scheduler.pump(timeout=None)
    assert advisor.killed
    (escalation,) = [n for n in world.notices if n.kind == "escalation"]
    assert escalation.text.endswith("; the advisor failed: the advisor timed out (60 s)")
    advisor.say("Too late.")  # a late answer changes nothing
    advisor.settle()
    scheduler.pump()
    assert len([n for n in world.notices if n.kind == "escalation"]) == 1
    assert "Too late." not in "".join(world.runtime.latest("design").steers)


def test_an_advisor_that_cannot_start_or_says_nothing_falls_back(world: RuntimeWorld) -> None:
    scheduler = world.scheduler_for(world.squad_id, monitor_policy=POLICY, advisor=ADVISOR)
    scheduler.reconcile()
    world.runtime.fail_next_spawn = "pi not found"
    world.runtime.latest("design").say("x")
    scheduler.pump()
    stay_quiet_until_escalated(world, scheduler)
    (escalation,) = [n for n in world.notices if n.kind == "escalation"]
    assert escalation.text.endswith("the advisor failed: the advisor did not start: pi not found")
    assert world.temp_dirs.live == []

    world.notices.clear()
    world.runtime.latest("design").say("y")
    scheduler.pump()
    stay_quiet_until_escalated(world, scheduler)
    (advisor,) = advisors(world)
    advisor.settle()
    scheduler.pump()
    (escalation,) = [n for n in world.notices if n.kind == "escalation"]
    assert escalation.text.endswith("the advisor failed: the advisor said nothing")


def test_an_advisor_whose_child_ended_is_stopped_and_nothing_escalated(
    world: RuntimeWorld,
) -> None:
    scheduler, child, advisor = escalated_to_an_advisor(world)
    child.exit(1, "crashed")
    scheduler.pump()
    assert advisor.killed
    assert "monitor: advisor stopped: the child it was asked about ended" in history(
        world, "design"
    )
    assert [n for n in world.notices if n.kind == "escalation"] == []


def test_stopping_the_scheduler_stops_its_advisors(world: RuntimeWorld) -> None:
    scheduler, _, advisor = escalated_to_an_advisor(world)
    scheduler.stop()
    assert advisor.killed
    assert world.temp_dirs.live == []
    assert world.task("design").status is TaskStatus.SUSPENDED


def test_the_environment_setting_reaches_every_scheduler_the_container_builds(
    world: RuntimeWorld,
) -> None:
    container = world.container()
    container.environ.override(
        {"PI_SQUAD_ROOT": world.root, "PI_SQUAD_ADVISOR_MODEL": "anthropic/claude-haiku"}
    )
    scheduler = container.use_cases().scheduler(
        squad_id=world.squad_id,
        runtime=world.runtime,
        notices=world.notices.append,
        monitor_policy=POLICY,
    )
    escalate(world, scheduler)
    (advisor,) = advisors(world)
    assert (advisor.request.provider, advisor.request.model) == ("anthropic", "claude-haiku")
