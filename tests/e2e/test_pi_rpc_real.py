"""``adapters.pi_rpc`` driving real Pi 0.80.10 over the scripted model (``echo`` policy).

Skipped when the project runtime is not installed (``make runtime``); CI installs it. No
extension is loaded: these tests prove the RPC child runtime itself.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from adapters.pi_rpc import PiRpcChild, PiRpcRuntime
from adapters.pi_runtime import (
    PiRuntime,
    pi_command,
    pi_environment,
)
from adapters.scripted_model import MODEL_ID, PROVIDER, ScriptedModelServer, write_models_json
from adapters.scripted_model.policies import ECHO_PREFIX
from application.ports import (
    AssistantText,
    ChildEvent,
    Exited,
    NewSession,
    ResumeSession,
    SessionBound,
    SessionChoice,
    Settled,
    SpawnRequest,
    SteerDelivered,
)

pytestmark = pytest.mark.realpi

WAIT = 60.0


class Recorder:
    def __init__(self) -> None:
        self.events: list[ChildEvent] = []
        self._changed = threading.Condition()

    def __call__(self, event: ChildEvent) -> None:
        with self._changed:
            self.events.append(event)
            self._changed.notify_all()

    def wait_for(self, predicate: Callable[[ChildEvent], bool]) -> list[ChildEvent]:
        with self._changed:
            found = self._changed.wait_for(
                lambda: any(predicate(e) for e in self.events), timeout=WAIT
            )
            assert found, f"timed out; events so far: {self.events}"
            return list(self.events)

    def until_exit(self) -> list[ChildEvent]:
        return self.wait_for(lambda e: isinstance(e, Exited))


class Squad:
    """One isolated Pi agent dir, a task directory and a squad cwd under ``tmp_path``."""

    def __init__(self, runtime: PiRuntime, tmp_path: Path, server: ScriptedModelServer) -> None:
        agent_dir = tmp_path / "agent"
        write_models_json(agent_dir, server.base_url)
        self.cwd = tmp_path / "work"
        self.cwd.mkdir()
        self.session_dir = tmp_path / "task" / "session"
        self.session_dir.mkdir(parents=True)
        self.runtime = PiRpcRuntime(
            pi_command(runtime),
            pi_environment(os.environ, agent_dir, runtime),
            None,
            provider=PROVIDER,
            kill_grace=3.0,
        )
        self.started: list[PiRpcChild] = []

    def spawn(self, session: SessionChoice, prompt: str, sink: Recorder) -> PiRpcChild:
        request = SpawnRequest(
            squad_id="sq1",
            task_id="t1",
            cwd=str(self.cwd),
            session=session,
            system_prompt="You are a test agent.\nscripted-policy: echo\n",
            first_prompt=prompt,
            environment={"PI_SQUAD_CHILD": "1"},
            model=MODEL_ID,
        )
        handle = self.runtime.spawn(request, sink)
        self.started.append(handle)
        return handle


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer("echo") as running:
        yield running


@pytest.fixture
def squad(runtime: PiRuntime, tmp_path: Path, server: ScriptedModelServer) -> Iterator[Squad]:
    made = Squad(runtime, tmp_path, server)
    yield made
    for handle in made.started:
        handle.kill()


def test_new_session_settles_then_resumes_on_the_same_file(squad: Squad) -> None:
    first = Recorder()
    handle = squad.spawn(NewSession(str(squad.session_dir)), "first prompt", first)
    events = first.until_exit()
    assert [type(e).__name__ for e in events] == [
        "SessionBound", "AssistantText", "Settled", "Exited",
    ]  # fmt: skip
    bound, reply, settled, exited = events
    assert isinstance(bound, SessionBound)
    assert isinstance(reply, AssistantText)
    session_file = Path(bound.session_file)
    assert session_file.parent == squad.session_dir
    assert bound.session_id is not None
    assert bound.session_id in session_file.name
    assert reply.text == ECHO_PREFIX + "first prompt"
    assert reply.input_tokens > 0
    assert reply.output_tokens > 0
    assert reply.cost == 0.0  # the scripted model's models.json has no prices
    assert settled == Settled("t1", handle.child_id, turn_count=1, tool_call_count=0)
    assert exited == Exited("t1", handle.child_id, exit_code=0, stderr_tail="", unexpected=False)
    assert session_file.is_file()  # Pi writes it lazily, after the first assistant message
    size = session_file.stat().st_size

    second = Recorder()
    resumed = squad.spawn(ResumeSession(str(session_file)), "second prompt", second)
    events = second.until_exit()
    bound2, reply2, settled2, exited2 = events
    assert isinstance(bound2, SessionBound)
    assert bound2.session_file == str(session_file)
    assert bound2.session_id == bound.session_id
    assert isinstance(reply2, AssistantText)
    assert reply2.text == ECHO_PREFIX + "second prompt"

    # The first exchange was restored: the whole prompt (its cached part included) is longer.
    def prompt(text: AssistantText) -> int:
        return (text.input_tokens or 0) + (text.cache_read or 0) + (text.cache_write or 0)

    assert prompt(reply2) > prompt(reply)
    assert settled2 == Settled("t1", resumed.child_id, turn_count=1, tool_call_count=0)
    assert isinstance(exited2, Exited)
    assert exited2.unexpected is False
    assert exited2.exit_code == 0
    assert session_file.stat().st_size > size
    assert resumed.child_id != handle.child_id
    assert list(squad.session_dir.iterdir()) == [session_file]


def test_a_killed_child_is_reaped_and_an_outside_kill_is_unexpected(
    squad: Squad, server: ScriptedModelServer
) -> None:
    server.chunk_delay = 0.5  # keeps the child streaming
    killed = Recorder()
    handle = squad.spawn(NewSession(str(squad.session_dir)), "slow one", killed)
    handle.kill()
    assert not handle.alive()
    exited = killed.until_exit()[-1]
    assert isinstance(exited, Exited)
    assert exited.unexpected is False
    assert not Path(f"/proc/{handle.pid}").exists()

    crashed = Recorder()
    victim = squad.spawn(NewSession(str(squad.session_dir)), "slow two", crashed)
    os.kill(victim.pid, signal.SIGKILL)
    exited = crashed.until_exit()[-1]
    assert exited == Exited("t1", victim.child_id, -signal.SIGKILL, "", unexpected=True)


def test_steer_and_follow_up_reach_the_model_before_settlement(
    squad: Squad, server: ScriptedModelServer
) -> None:
    server.chunk_delay = 0.1  # keeps the child streaming while it is steered
    recorder = Recorder()
    handle = squad.spawn(NewSession(str(squad.session_dir)), "take your time", recorder)
    assert handle.steer("also look at the tests") is True
    assert handle.follow_up("then summarise") is True
    events = recorder.until_exit()
    texts = [e.text for e in events if isinstance(e, AssistantText)]
    assert texts == [
        ECHO_PREFIX + "take your time",
        ECHO_PREFIX + "also look at the tests",
        ECHO_PREFIX + "then summarise",
    ]
    assert events[-2] == Settled("t1", handle.child_id, turn_count=3, tool_call_count=0)
    assert events[-1] == Exited("t1", handle.child_id, 0, "", unexpected=False)


def test_a_steered_message_is_reported_once_seen_in_the_session_and_cost_is_numeric(
    squad: Squad, server: ScriptedModelServer
) -> None:
    """The flow budget's proof of delivery: Pi echoes a steer into the session as a user
    message, which the runtime reports as ``SteerDelivered`` (the first prompt and a follow-up
    are not); Pi reports a numeric cost (0 here), so ``cost_reported`` holds."""
    server.chunk_delay = 0.1
    recorder = Recorder()
    handle = squad.spawn(NewSession(str(squad.session_dir)), "take your time", recorder)
    assert handle.steer("[notice] wrap up now") is True
    assert handle.follow_up("then summarise") is True
    events = recorder.until_exit()
    delivered = [e for e in events if isinstance(e, SteerDelivered)]
    assert delivered == [SteerDelivered("t1", handle.child_id, "[notice] wrap up now")]
    replies = [e for e in events if isinstance(e, AssistantText)]
    # Delivered before the response it produced.
    assert events.index(delivered[0]) < events.index(replies[1])
    assert all(reply.cost_reported for reply in replies)


def test_abort_settles_the_run_and_the_exit_is_expected(
    squad: Squad, server: ScriptedModelServer
) -> None:
    server.chunk_delay = 0.5
    recorder = Recorder()
    handle = squad.spawn(NewSession(str(squad.session_dir)), "never finished", recorder)
    handle.abort()
    events = recorder.until_exit()
    assert isinstance(events[0], SessionBound)
    assert sum(isinstance(e, Settled) for e in events) == 1
    # The aborted assistant message (if the model call had begun) carries no text block.
    assert [e.text for e in events if isinstance(e, AssistantText)] in ([], [""])
    assert events[-1] == Exited("t1", handle.child_id, 0, "", unexpected=False)
