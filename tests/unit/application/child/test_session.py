"""``ChildSession`` on a fake runtime and a fake clock: what a child's stream leaves behind (its
texts, each message's usage and their sum, its last message), how it ends (settled, exited),
and each limit it is stopped at (deadline, provider-error grace, output ceiling, the owner's
stop), with a kill that also reaches a child still starting."""

from __future__ import annotations

import threading

import pytest

from application.child.session import ChildSession, Stop, message_usage
from application.ports import (
    AssistantText,
    ChildEvent,
    NewSession,
    OutputProgress,
    ProviderError,
    ProviderRecovery,
    SpawnRequest,
)
from application.spawn_request import child_request
from domain.child_environment import CHILD_FLAG
from domain.usage import Usage
from tests.fakes.child_runtime import FakeChild, FakeChildRuntime
from tests.fakes.clock import FakeClock

HOUR = 3600.0


def request(task_id: str = "t1") -> SpawnRequest:
    return child_request(
        owner="owner",
        task_id=task_id,
        cwd="/work",
        session=NewSession("/sessions/t1"),
        system_prompt="system",
        first_prompt="go",
    )


def started(
    *, error_grace: float | None = None, output_ceiling: int | None = None
) -> tuple[ChildSession, FakeChild, FakeClock]:
    runtime, clock = FakeChildRuntime(), FakeClock()
    session = ChildSession(runtime, clock, error_grace=error_grace, output_ceiling=output_ceiling)
    session.start(request())
    (child,) = runtime.spawned
    return session, child, clock


def answer(
    child: FakeChild,
    text: str,
    *,
    usage_reported: bool = False,
    cache_read: int | None = None,
    stop_reason: str | None = None,
) -> None:
    child.sink(
        AssistantText(
            child.task_id,
            child.child_id,
            text,
            10,
            5,
            0.25,
            cache_read=cache_read,
            usage_reported=usage_reported,
            stop_reason=stop_reason,
        )
    )


def test_the_builder_starts_a_legacy_child_unless_told_otherwise() -> None:
    built = request()
    assert dict(built.environment) == {CHILD_FLAG: "1"}
    assert (built.squad_id, built.tools, built.observe_output) == ("owner", None, False)
    own = child_request(
        owner="o",
        task_id="t",
        cwd="/",
        session=NewSession("/s"),
        system_prompt="s",
        first_prompt="f",
        environment={"X": "1"},
        tools=(),
    )
    assert (dict(own.environment), own.tools) == ({"X": "1"}, ())


def test_texts_usage_and_the_last_message_are_kept_and_a_settled_child_ends_the_wait() -> None:
    session, child, clock = started()
    answer(child, "first", usage_reported=True, cache_read=3)
    answer(child, "  ", stop_reason="error")
    answer(child, "final", usage_reported=True)
    child.settle()
    assert session.wait(clock.monotonic() + HOUR) is None
    assert session.texts == ["first", "  ", "final"]
    assert session.last_words() == "final"
    assert session.last is not None
    assert session.last.text == "final"
    assert session.responses == 2  # the message that ended with an error was no answer
    assert [u.turns for u in session.per_message] == [1, 1, 1]
    assert session.usage.input_tokens == 30
    assert session.usage.output_tokens == 15
    assert session.usage.cost == pytest.approx(0.75)
    assert session.usage.turns == 3
    assert session.usage.reported_value("cache_read") == 3
    assert session.settled is not None
    assert session.ended


def test_an_exit_ends_the_wait_too() -> None:
    session, child, clock = started()
    child.exit(137)
    assert session.wait(clock.monotonic() + HOUR) is None
    assert session.exited is not None
    assert session.exited.exit_code == 137
    assert session.last_words() is None


def test_a_message_without_usage_reports_no_category_but_still_counts_its_figures() -> None:
    silent = AssistantText("t", "c", "x", 4, 2, 0.5)
    assert message_usage(silent) == Usage(input_tokens=4, output_tokens=2, cost=0.5, turns=1)
    told = message_usage(AssistantText("t", "c", "x", 4, 2, 0.5, usage_reported=True))
    assert told.reported == frozenset({"input", "output", "cost"})
    assert told.reported_value("cache_write") is None
    assert told.cost_estimated  # Pi's price from its model table, never a bill


def test_the_deadline_stops_a_child_that_neither_settles_nor_exits() -> None:
    session, _child, clock = started()
    deadline = clock.monotonic() + 60
    assert session.due(deadline) is None
    clock.advance(60)
    assert session.due(deadline) is Stop.TIMEOUT
    assert session.wait(deadline) is Stop.TIMEOUT


def test_a_provider_error_stops_a_silent_child_after_the_grace_and_recovery_ends_the_grace() -> (
    None
):
    session, child, clock = started(error_grace=30)
    deadline = clock.monotonic() + HOUR
    child.sink(ProviderError(child.task_id, child.child_id, "503"))
    clock.advance(29)
    assert session.due(deadline) is None
    child.sink(ProviderRecovery(child.task_id, child.child_id, "retry"))
    clock.advance(60)
    assert session.due(deadline) is None  # Pi is working past it
    assert session.recoveries == 1
    child.sink(ProviderError(child.task_id, child.child_id, "529"))
    clock.advance(30)
    assert session.wait(deadline) is Stop.PROVIDER_ERROR
    assert (session.provider_error, session.last_provider_error) == ("529", "529")
    answer(child, "back")
    assert (session.provider_error, session.last_provider_error) == (None, "529")


def test_without_a_grace_only_the_deadline_stops_a_child_after_a_provider_error() -> None:
    session, child, clock = started()
    deadline = clock.monotonic() + HOUR
    child.sink(ProviderError(child.task_id, child.child_id, "503"))
    clock.advance(HOUR - 1)
    assert session.due(deadline) is None


def test_a_message_past_the_output_ceiling_kills_the_child_at_once() -> None:
    session, child, clock = started(output_ceiling=256)
    child.sink(OutputProgress(child.task_id, child.child_id, 256))
    assert child.alive()
    child.sink(OutputProgress(child.task_id, child.child_id, 300))
    assert child.killed
    assert (session.stopped, session.overflow) == (Stop.OUTPUT, 300)
    assert session.wait(clock.monotonic() + HOUR) is Stop.OUTPUT


def test_a_finalised_message_past_the_ceiling_counts_its_encoded_bytes() -> None:
    session, child, _clock = started(output_ceiling=4)
    answer(child, "ééé")  # three characters, six bytes
    assert child.killed
    assert session.overflow == 6


def test_the_owners_stop_ends_the_wait_with_its_reason_and_the_first_reason_stays() -> None:
    session, _child, clock = started()
    session.stop(Stop.BUDGET)
    session.stop(Stop.OUTPUT)
    assert session.wait(clock.monotonic() + HOUR) is Stop.BUDGET


def test_a_set_until_event_ends_the_wait_once_woken() -> None:
    session, _child, clock = started()
    until = threading.Event()

    def later() -> None:
        until.set()
        session.wake()

    threading.Timer(0.05, later).start()
    assert session.wait(clock.monotonic() + HOUR, until) is None


def test_an_event_from_another_thread_ends_a_blocked_wait() -> None:
    session, child, clock = started()
    threading.Timer(0.05, child.settle).start()
    assert session.wait(clock.monotonic() + HOUR) is None
    assert session.settled is not None


def test_a_kill_before_the_child_is_up_kills_it_as_soon_as_it_starts() -> None:
    runtime, clock = FakeChildRuntime(), FakeClock()
    session = ChildSession(runtime, clock)
    session.kill()
    session.start(request())
    assert runtime.spawned[0].killed


def test_a_failed_spawn_leaves_the_session_able_to_start_again() -> None:
    runtime, clock = FakeChildRuntime(fail_next_spawn="no pi"), FakeClock()
    session = ChildSession(runtime, clock)
    with pytest.raises(RuntimeError, match="no pi"):
        session.start(request())
    assert session.handle is None
    handle = session.start(request())
    assert session.handle is handle


def test_the_owner_hears_each_event_after_it_is_recorded_and_may_queue_them_itself() -> None:
    runtime, clock = FakeChildRuntime(), FakeClock()
    seen: list[tuple[ChildEvent, int]] = []
    session = ChildSession(runtime, clock, on_event=lambda e: seen.append((e, len(session.texts))))
    queued: list[ChildEvent] = []
    session.start(request(), deliver=queued.append)
    child = runtime.spawned[0]
    answer(child, "hello")
    assert session.texts == []  # delivered to the owner's queue, not yet recorded
    session.record(queued.pop())
    assert [count for _event, count in seen] == [1]


def test_elapsed_time_and_deadlines_count_on_the_clock_from_the_start() -> None:
    runtime, clock = FakeChildRuntime(), FakeClock()
    session = ChildSession(runtime, clock)
    assert session.elapsed_ms() == 0
    session.start(request())
    assert session.deadline(60) == clock.monotonic() + 60
    clock.advance(1.5)
    assert session.elapsed_ms() == 1500
