"""``adapters.pi_rpc`` against a stand-in ``pi`` executable (tests/fakes/fake_pi_executable.py):
what a child's RPC stream becomes: malformed and oversized records, provider errors, steering,
and sinks that call back or raise."""

from __future__ import annotations

import logging
import os
import threading
import time

import pytest

from adapters.pi_rpc import MAX_RECORD_BYTES, PiRpcChild
from application.ports import (
    AssistantText,
    ChildEvent,
    Exited,
    ProviderError,
    ProviderRecovery,
    Settled,
    ToolStarted,
)
from tests.fakes import fake_pi_executable as fake
from tests.integration.pi_rpc.support import WAIT, Recorder, World

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX signals and /proc")


def test_raw_u2028_malformed_lines_and_duplicate_keys(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="adapters.pi_rpc")
    _, recorder = world.spawn(world.runtime("unicode"))
    events = recorder.until_exit()
    assert [type(e).__name__ for e in events] == [
        "SessionBound", "AssistantText", "ToolCallsRequested", "ToolStarted", "ToolResultSeen",
        "AssistantText", "Settled", "Exited",
    ]  # fmt: skip
    last = events[5]
    assert isinstance(last, AssistantText)
    assert last.text == "\n".join((*fake.LAST_TEXTS, fake.UNICODE_TEXT))
    assert "\u2028" in last.text
    assert events[6] == Settled("t1", "child-1", turn_count=2, tool_call_count=1)
    skipped = [r.getMessage() for r in caplog.records if "malformed" in r.getMessage()]
    assert len(skipped) == 3
    assert any("UTF-8" in message for message in skipped)
    assert any("duplicate" in message for message in skipped)
    assert not any("not json" in message for message in skipped)  # content is never logged


@pytest.mark.parametrize("limit", [None, 200_000])
def test_message_update_spam_and_long_records(
    world: World,
    caplog: pytest.LogCaptureFixture,
    limit: int | None,
) -> None:
    caplog.set_level(logging.WARNING, logger="adapters.pi_rpc")
    runtime = world.runtime(
        "spam",
        extension=None,
        extra_env={"FAKE_PI_SPAM": "3000", "FAKE_PI_BIG_TEXT": "300000"},
        max_record_bytes=limit or MAX_RECORD_BYTES,
    )
    began = time.monotonic()
    _, recorder = world.spawn(runtime)
    events = recorder.until_exit()
    assert time.monotonic() - began < 8
    texts = [e.text for e in events if isinstance(e, AssistantText)]
    kinds = [type(e).__name__ for e in events if not isinstance(e, AssistantText)]
    assert kinds == [
        "SessionBound", "ToolCallsRequested", "ToolStarted", "ToolResultSeen", "Settled", "Exited",
    ]  # fmt: skip
    if limit is None:
        assert texts == [fake.FIRST_TEXT, "\n".join((*fake.LAST_TEXTS, "y" * 300_000))]
        assert caplog.records == []
    else:  # message_start, message_end, turn_end and agent_end carry the long text: skipped
        assert texts == [fake.FIRST_TEXT]
        assert [r.getMessage() for r in caplog.records] == [
            f"child child-1: skipped a stdout record over {limit} bytes"
        ] * 4


def test_a_provider_error_retry_and_final_failure_become_child_events(world: World) -> None:
    handle, recorder = world.spawn(world.runtime("provider_error"))
    events = recorder.wait_for(lambda events: len(events) >= 7)
    assert [type(e).__name__ for e in events] == [
        "SessionBound",
        "AssistantText",
        "ProviderError",  # the failed response
        "ProviderRecovery",  # auto_retry_start
        "AssistantText",
        "ProviderError",  # the failed retry
        "ProviderError",  # auto_retry_end: Pi gives up
    ]
    errors = [e for e in events if isinstance(e, ProviderError)]
    assert [e.message for e in errors] == [fake.PROVIDER_ERROR] * 3
    recovery = events[3]
    assert isinstance(recovery, ProviderRecovery)
    assert recovery.reason == "retry"
    # It stalls: nothing settles, the parent has to stop it.
    assert handle.alive()
    handle.kill()
    recorder.until_exit()


def test_steer_follow_up_and_abort(world: World) -> None:
    handle, recorder = world.spawn(world.runtime("busy"))
    assert handle.steer("look at the tests too") is True
    assert handle.steer("refuse") is False
    assert handle.follow_up("then summarise") is True
    assert handle.follow_up("refuse") is False
    assert handle.alive()
    handle.abort()
    events = recorder.until_exit()
    assert [type(e).__name__ for e in events] == [
        "SessionBound", "ToolStarted", "AssistantText", "Settled", "Exited",
    ]  # fmt: skip
    assert events[-2] == Settled("t1", "child-1", turn_count=1, tool_call_count=1)
    exited = events[-1]
    assert isinstance(exited, Exited)
    assert exited.unexpected is False
    assert exited.exit_code == 0
    assert handle.steer("too late") is False


def test_the_sink_may_call_the_handle(world: World) -> None:
    ready = threading.Event()
    holder: list[PiRpcChild] = []
    answers: list[bool] = []
    recorder = Recorder()

    def sink(event: ChildEvent) -> None:
        recorder(event)
        if isinstance(event, ToolStarted):
            assert ready.wait(WAIT)
            answers.append(holder[0].steer("from inside the sink"))
            holder[0].abort()

    handle = world.runtime("busy").spawn(world.request(), sink)
    holder.append(handle)
    world.keep(handle)
    ready.set()
    recorder.until_exit()
    assert answers == [True]


def test_a_raising_sink_does_not_stop_delivery(world: World) -> None:
    recorder = Recorder()

    def sink(event: ChildEvent) -> None:
        recorder(event)
        raise RuntimeError("scheduler bug")

    world.keep(world.runtime("settle").spawn(world.request(), sink))
    assert isinstance(recorder.until_exit()[-1], Exited)


def test_each_child_reports_under_its_own_id(world: World) -> None:
    recorder = Recorder()
    runtime = world.runtime("busy")
    first = runtime.spawn(world.request(), recorder)
    second = runtime.spawn(world.request(), recorder)
    world.keep(first)
    world.keep(second)
    first.kill()  # the replaced child: its events still arrive, under its own id
    second.abort()
    events = recorder.wait_for(lambda es: sum(isinstance(e, Exited) for e in es) == 2)
    assert {e.child_id for e in events} == {"child-1", "child-2"}
    by_child = {
        child: [type(e).__name__ for e in events if e.child_id == child]
        for child in ("child-1", "child-2")
    }
    assert by_child["child-1"] == ["SessionBound", "ToolStarted", "Exited"]
    assert by_child["child-2"] == [
        "SessionBound", "ToolStarted", "AssistantText", "Settled", "Exited",
    ]  # fmt: skip
