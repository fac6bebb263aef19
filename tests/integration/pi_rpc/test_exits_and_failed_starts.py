"""``adapters.pi_rpc`` against a stand-in ``pi`` executable (tests/fakes/fake_pi_executable.py):
unexpected exits, settlement, kills with their signals, and starts that fail leaving nothing
behind."""

from __future__ import annotations

import os
import re
import signal
import time

import pytest

from adapters.pi_rpc import STDERR_TAIL_BYTES, PiRpcRuntime, SpawnFailed
from application.ports import Exited, Settled
from tests.fakes import fake_pi_executable as fake
from tests.integration.pi_rpc.support import Recorder, World, gone

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX signals and /proc")


def test_exit_without_settlement_is_unexpected_with_a_bounded_stderr_tail(
    world: World,
) -> None:
    handle, recorder = world.spawn(world.runtime("exit"))
    events = recorder.until_exit()
    assert [type(e).__name__ for e in events] == ["SessionBound", "Exited"]
    exited = events[-1]
    assert isinstance(exited, Exited)
    assert exited.unexpected is True
    assert exited.exit_code == 3
    assert exited.stderr_tail.rstrip("\n").endswith(fake.FATAL)
    assert len(exited.stderr_tail.encode()) == STDERR_TAIL_BYTES
    assert exited.child_id == handle.child_id
    assert gone(handle.pid)
    assert list(world.prompts.iterdir()) == []


def test_pending_requests_fail_when_the_child_exits(
    world: World,
) -> None:
    runtime = world.runtime("exit", extra_env={"FAKE_PI_EXIT_DELAY": "0.5"}, request_timeout=30)
    handle, recorder = world.spawn(runtime)
    began = time.monotonic()
    assert handle.steer("are you there?") is False  # never answered; the exit releases it
    assert time.monotonic() - began < 5
    assert handle.follow_up("after exit") is False
    recorder.until_exit()


def test_settlement_closes_stdin_then_terminates_a_lingering_child(
    world: World,
) -> None:
    handle, recorder = world.spawn(world.runtime("linger", settle_exit_grace=0.2))
    events = recorder.until_exit()
    assert isinstance(events[-2], Settled)
    assert events[-1] == Exited(
        "t1", "child-1", exit_code=-signal.SIGTERM, stderr_tail="", unexpected=False
    )
    assert gone(handle.pid)


def test_kill_escalates_to_sigkill_for_a_child_ignoring_sigterm(
    world: World,
) -> None:
    handle, recorder = world.spawn(world.runtime("hang", kill_grace=0.3))
    pid = world.recorded()["pid"]
    assert handle.alive()
    time.sleep(0.1)
    assert handle.alive()
    began = time.monotonic()
    handle.kill()
    assert time.monotonic() - began >= 0.3
    assert not handle.alive()
    assert handle.exit_code == -signal.SIGKILL
    assert gone(pid)
    handle.kill()  # idempotent
    events = recorder.until_exit()
    assert events[-1] == Exited(
        "t1", "child-1", exit_code=-signal.SIGKILL, stderr_tail="", unexpected=False
    )
    assert sum(isinstance(e, Exited) for e in events) == 1


def test_kill_stops_a_cooperative_child_with_sigterm(
    world: World,
) -> None:
    handle, recorder = world.spawn(world.runtime("busy"))
    handle.kill()
    assert handle.exit_code == -signal.SIGTERM
    assert gone(handle.pid)
    exited = recorder.until_exit()[-1]
    assert isinstance(exited, Exited)
    assert exited.unexpected is False


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("refuse_prompt", r"the first prompt was refused: Agent is already processing\."),
        ("silent", "no answer to get_state within 0.5 s"),
        ("no_session", "get_state answered without a session file"),
        # Pi gone before or after the get_state line was written.
        ("die", r"(no answer to get_state: the child|cannot write to the child)"),
    ],
)
def test_a_failed_start_raises_and_leaves_nothing_behind(
    world: World, mode: str, reason: str
) -> None:
    recorder = Recorder()
    runtime = world.runtime(mode, startup_timeout=0.5, kill_grace=0.5)
    with pytest.raises(SpawnFailed) as raised:
        runtime.spawn(world.request(), recorder)
    failure = raised.value
    assert re.match(reason, failure.reason)
    assert failure.task_id == "t1"
    assert failure.child_id == "child-1"
    assert failure.exit_code is not None
    # Only a start that never wrote the first prompt is safe to retry (nothing was billed).
    assert failure.before_prompt is (mode != "refuse_prompt")
    if mode == "die":
        assert failure.exit_code == 2
        assert failure.stderr_tail == "fake pi: cannot start\n"
    assert gone(world.recorded()["pid"])
    assert list(world.prompts.iterdir()) == []
    time.sleep(0.1)
    assert recorder.events == []  # the sink never hears of a child that failed to start


def test_a_missing_cwd_or_executable_is_a_failed_start(world: World) -> None:
    with pytest.raises(SpawnFailed, match="cannot start"):
        world.runtime("settle").spawn(world.request(cwd=str(world.tmp / "absent")), Recorder())
    missing = PiRpcRuntime([str(world.tmp / "no-pi")], {}, None, temp_dir=str(world.prompts))
    with pytest.raises(SpawnFailed, match="cannot start") as raised:
        missing.spawn(world.request(), Recorder())
    assert raised.value.before_prompt
    assert list(world.prompts.iterdir()) == []
