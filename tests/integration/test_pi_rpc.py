"""``adapters.pi_rpc`` against a stand-in ``pi`` executable (tests/fakes/fake_pi_executable.py).

Real processes, pipes and signals; only Pi is faked. The fake's behaviour is chosen with
``FAKE_PI_MODE`` and it records its argv, cwd, environment and system prompt file.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from adapters.isolation.confinement import ConfinementRefused
from adapters.pi_rpc import (
    MAX_RECORD_BYTES,
    STDERR_TAIL_BYTES,
    PiRpcChild,
    PiRpcRuntime,
    SpawnFailed,
    child_argv,
)
from adapters.pi_rpc.command_line import NOTHING_DISCOVERED, child_environment
from application.ports import (
    AssistantText,
    ChildEvent,
    Confinement,
    Exited,
    ForkSession,
    NewSession,
    ProviderError,
    ProviderRecovery,
    RequestedCall,
    ResumeSession,
    SessionBound,
    SessionChoice,
    Settled,
    SpawnRequest,
    ToolCallsRequested,
    ToolResultSeen,
    ToolStarted,
)
from domain.errors import ErrorCode, IsolationUnavailable
from tests.fakes import fake_pi_executable as fake
from tests.fakes.isolation import FakeIsolation

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX signals and /proc")

FAKE = Path(fake.__file__).resolve()
EXTENSION = "/opt/pi-squad/entrypoints/pi"
SYSTEM_PROMPT = "You are the backend agent.\nscripted-policy: echo\nété ✓\n"
REQUEST_ENV = {"PI_SQUAD_CHILD": "1", "PI_SQUAD_ID": "sq1", "PI_SQUAD_TASK_ID": "t1"}
WAIT = 10.0


class Recorder:
    """A thread-safe sink that remembers which thread called it."""

    def __init__(self) -> None:
        self.events: list[ChildEvent] = []
        self.threads: set[str] = set()
        self._changed = threading.Condition()

    def __call__(self, event: ChildEvent) -> None:
        with self._changed:
            self.events.append(event)
            self.threads.add(threading.current_thread().name)
            self._changed.notify_all()

    def wait_for(self, predicate: Callable[[list[ChildEvent]], bool]) -> list[ChildEvent]:
        with self._changed:
            if not self._changed.wait_for(lambda: predicate(self.events), timeout=WAIT):
                raise AssertionError(f"timed out; events so far: {self.events}")
            return list(self.events)

    def until_exit(self) -> list[ChildEvent]:
        return self.wait_for(lambda events: any(isinstance(e, Exited) for e in events))

    def kinds(self) -> list[str]:
        return [type(event).__name__ for event in self.events]


class World:
    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.record_path = tmp_path / "fake-record.json"
        self.prompts = tmp_path / "prompts"
        self.prompts.mkdir()
        self.cwd = tmp_path / "squad-cwd"
        self.cwd.mkdir()
        self.sessions = tmp_path / "task" / "session"
        self.sessions.mkdir(parents=True)
        self.ids = (f"child-{n}" for n in itertools.count(1))
        self.started: list[PiRpcChild] = []

    def base_env(self, mode: str, **extra: str) -> dict[str, str]:
        return {
            "FAKE_PI_MODE": mode,
            "FAKE_PI_RECORD": str(self.record_path),
            "PYTHONCOERCECLOCALE": "0",  # no LC_CTYPE added by the interpreter
            "BASE_ONLY": "kept",
            "PI_SQUAD_TASK_ID": "overridden by the request",
            **extra,
        }

    def runtime(
        self,
        mode: str,
        *,
        extension: str | None = EXTENSION,
        extra_env: dict[str, str] | None = None,
        startup_timeout: float = 5.0,
        request_timeout: float = 5.0,
        settle_exit_grace: float = 2.0,
        kill_grace: float = 2.0,
        max_record_bytes: int = MAX_RECORD_BYTES,
        isolation: FakeIsolation | None = None,
    ) -> PiRpcRuntime:
        return PiRpcRuntime(
            [sys.executable, str(FAKE)],
            self.base_env(mode, **(extra_env or {})),
            extension,
            provider="fake",
            startup_timeout=startup_timeout,
            request_timeout=request_timeout,
            settle_exit_grace=settle_exit_grace,
            kill_grace=kill_grace,
            max_record_bytes=max_record_bytes,
            temp_dir=str(self.prompts),
            new_child_id=lambda: next(self.ids),
            isolation=isolation,
        )

    def spawn(
        self, runtime: PiRpcRuntime, request: SpawnRequest | None = None
    ) -> tuple[PiRpcChild, Recorder]:
        """Start a child whose events a new ``Recorder`` receives; it is killed at teardown."""
        recorder = Recorder()
        return self.keep(runtime.spawn(request or self.request(), recorder)), recorder

    def keep(self, handle: PiRpcChild) -> PiRpcChild:
        """Kill ``handle`` at teardown (a no-op for one that has exited)."""
        self.started.append(handle)
        return handle

    def request(self, session: SessionChoice | None = None, **fields: Any) -> SpawnRequest:
        values: dict[str, Any] = {
            "squad_id": "sq1",
            "task_id": "t1",
            "cwd": str(self.cwd),
            "session": session or NewSession(str(self.sessions)),
            "system_prompt": SYSTEM_PROMPT,
            "first_prompt": "Do the task.",
            "environment": REQUEST_ENV,
        } | fields
        return SpawnRequest(**values)

    def confined_request(self, squad_root: Path) -> tuple[SpawnRequest, Path]:
        """A request confined to this world's cwd and the task ledger under ``squad_root``
        (created); the ledger's path."""
        ledger = squad_root / "sq1" / "t1"
        ledger.mkdir(parents=True)
        confinement = Confinement(
            squad_root=str(squad_root), ledger_dir=str(ledger), project_dir=str(self.cwd)
        )
        return self.request(confinement=confinement), ledger

    def recorded(self) -> dict[str, Any]:
        deadline = time.monotonic() + WAIT
        while not self.record_path.exists():
            assert time.monotonic() < deadline, "the fake never recorded its start"
            time.sleep(0.01)
        result: dict[str, Any] = json.loads(self.record_path.read_text(encoding="utf-8"))
        return result


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    world = World(tmp_path)
    yield world
    for handle in world.started:
        handle.kill()


def gone(pid: int) -> bool:
    """Reaped: not our child any more (no zombie to wait for) and absent from /proc."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return not Path(f"/proc/{pid}").exists()
    return False


# -- command line, environment, prompt file, events ----------------------------------------------


def test_settled_child_argv_env_prompt_file_and_event_order(
    world: World,
) -> None:
    request = world.request(model="fake-model", thinking="low", tools=("read", "squad_spec_read"))
    handle, recorder = world.spawn(world.runtime("settle"), request)
    assert handle.child_id == "child-1"
    assert handle.task_id == "t1"

    started = world.recorded()
    prompt_file = started["promptFile"]
    assert started["argv"] == [
        "--mode", "rpc",
        "--session-dir", str(world.sessions),
        *NOTHING_DISCOVERED,
        "-e", EXTENSION,
        "--append-system-prompt", prompt_file,
        "--provider", "fake",
        "--model", "fake-model",
        "--thinking", "low",
        "--tools", "read,squad_spec_read",
    ]  # fmt: skip
    assert Path(started["cwd"]) == world.cwd
    assert started["env"] == world.base_env("settle") | REQUEST_ENV | {"PI_OFFLINE": "1"}
    assert started["env"]["PI_SQUAD_TASK_ID"] == "t1"
    assert Path(prompt_file).parent == world.prompts
    assert started["promptMode"] == 0o600
    assert started["promptText"] == SYSTEM_PROMPT

    events = recorder.until_exit()
    bound = events[0]
    assert isinstance(bound, SessionBound)
    session_file = Path(bound.session_file)
    assert session_file.parent == world.sessions
    assert session_file.name == f"fake_{bound.session_id}.jsonl"
    assert events[1:] == [
        AssistantText("t1", "child-1", fake.FIRST_TEXT, 120, 7, 0.0125),
        ToolCallsRequested("t1", "child-1", (RequestedCall("call_1", "read", {"path": "a"}),)),
        ToolStarted("t1", "child-1", "read", "call_1"),
        ToolResultSeen("t1", "child-1", "call_1", "read", True, ("file text",)),
        AssistantText("t1", "child-1", "\n".join(fake.LAST_TEXTS), 300, 11, 0.035),
        Settled("t1", "child-1", turn_count=2, tool_call_count=1),
        Exited("t1", "child-1", exit_code=0, stderr_tail="", unexpected=False),
    ]
    assert bound.task_id == "t1"
    assert bound.child_id == "child-1"
    assert Path(session_file).exists()
    assert not handle.alive()
    assert handle.exit_code == 0
    assert not Path(prompt_file).exists()
    assert list(world.prompts.iterdir()) == []
    assert gone(started["pid"])
    assert len(recorder.threads) == 1  # one dispatcher per child calls the sink


@pytest.mark.parametrize("choice", ["new", "resume", "fork"])
def test_each_session_choice_reaches_the_command_line(world: World, choice: str) -> None:
    existing = world.sessions / "earlier.jsonl"
    existing.write_text('{"type":"session","version":3}\n')
    forks = world.tmp / "forks"
    forks.mkdir()
    session: SessionChoice
    if choice == "new":
        session, expected = NewSession(str(world.sessions)), ["--session-dir", str(world.sessions)]
    elif choice == "resume":
        session, expected = ResumeSession(str(existing)), ["--session", str(existing)]
    else:
        session = ForkSession(str(existing), str(forks))
        expected = ["--fork", str(existing), "--session-dir", str(forks)]
    _, recorder = world.spawn(world.runtime("settle", extension=None), world.request(session))
    argv = world.recorded()["argv"]
    assert argv == [
        "--mode", "rpc", *expected, *NOTHING_DISCOVERED, "--append-system-prompt", argv[-3],
        "--provider", "fake",
    ]  # fmt: skip
    events = recorder.until_exit()
    assert events[-1] == Exited("t1", "child-1", exit_code=0, stderr_tail="", unexpected=False)
    bound = events[0]
    assert isinstance(bound, SessionBound)
    if isinstance(session, ResumeSession):
        assert bound.session_file == session.session_file
        assert len(existing.read_text().splitlines()) == 2


def test_command_line_variants() -> None:
    request = SpawnRequest(
        squad_id="s",
        task_id="t",
        cwd="/w",
        session=NewSession("/d"),
        system_prompt="",
        first_prompt="go",
        environment={},
        tools=(),
        provider="other",
    )
    argv = child_argv(["pi"], request, prompt_file="/p", extension="/e", provider="fake")
    assert argv == [
        "pi", "--mode", "rpc", "--session-dir", "/d",
        "--no-extensions", "--no-approve", "--no-skills", "--no-prompt-templates", "-e", "/e",
        "--append-system-prompt", "/p", "--provider", "other", "--no-tools",
    ]  # fmt: skip
    plain = attrs.evolve(request, tools=None, provider=None)
    bare = child_argv(["pi"], plain, prompt_file="/p", extension=None, provider=None)
    assert bare == [
        "pi", "--mode", "rpc", "--session-dir", "/d",
        "--no-extensions", "--no-approve", "--no-skills", "--no-prompt-templates",
        "--append-system-prompt", "/p",
    ]  # fmt: skip
    # A delegated worker's closed context: no context files either; like every child, it
    # trusts no project (its retry settings are in its private agent directory).
    closed = child_argv(
        ["pi"],
        attrs.evolve(request, closed_context=True),
        prompt_file="/p",
        extension=None,
        provider=None,
    )
    assert closed[-2:] == ["--no-context-files", "--no-tools"]
    assert "--approve" not in closed
    assert "--no-approve" in closed


@pytest.mark.parametrize("closed_context", [False, True])
def test_no_child_trusts_its_project_or_discovers_code_skills_or_templates(
    closed_context: bool,
) -> None:
    """Issue 28, break 1: a sibling can write the project's ``.pi/settings.json`` (``packages``,
    ``npmCommand``), ``.pi/extensions``, skills and prompts; no child honours any of it,
    whatever ``trust.json`` says."""
    request = SpawnRequest(
        squad_id="s",
        task_id="t",
        cwd="/w",
        session=ResumeSession("/s.jsonl"),
        system_prompt="",
        first_prompt="go",
        environment={},
        closed_context=closed_context,
    )
    argv = child_argv(["pi"], request, prompt_file="/p", extension="/e", provider=None)
    for flag in ("--no-approve", "--no-extensions", "--no-skills", "--no-prompt-templates"):
        assert flag in argv
    assert "--approve" not in argv
    assert "-a" not in argv


def test_every_child_starts_offline_whatever_it_inherits_or_is_given(world: World) -> None:
    """``PI_OFFLINE=1``: Pi installs no missing package (and so runs no ``npmCommand``) while it
    starts, even one the user's own settings name; neither the inherited environment nor a
    request can turn it off."""
    runtime = world.runtime("settle", extra_env={"PI_OFFLINE": "0"})
    request = world.request(environment={**REQUEST_ENV, "PI_OFFLINE": ""})
    _, recorder = world.spawn(runtime, request)
    recorder.until_exit()
    assert world.recorded()["env"]["PI_OFFLINE"] == "1"
    assert child_environment({"PI_OFFLINE": "no"}, request)["PI_OFFLINE"] == "1"


# -- protocol robustness -----------------------------------------------------------------------


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


# -- exits -------------------------------------------------------------------------------------


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


# -- steering, abort ---------------------------------------------------------------------------


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


# -- failed starts -----------------------------------------------------------------------------


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


# -- confinement ------------------------------------------------------------------------------


def confined_runtime(world: World, isolation: FakeIsolation) -> PiRpcRuntime:
    return world.runtime(
        "settle",
        extra_env={"PI_CODING_AGENT_DIR": str(world.tmp / "agent")},
        isolation=isolation,
    )


def test_a_confined_child_starts_through_the_isolation_with_exactly_its_grants(
    world: World,
) -> None:
    isolation = FakeIsolation()
    request, ledger = world.confined_request(world.tmp / "squads")
    _, recorder = world.spawn(confined_runtime(world, isolation), request)
    recorder.until_exit()
    (call,) = isolation.calls
    scratch = call.writable[2]
    # the user's agent directory is not among the grants: the child gets a private one
    assert call.writable == (str(ledger), str(world.cwd), scratch, "/dev/null")
    # the squad root is read-only in the child's namespace but for the ledger
    assert call.read_only == (os.path.realpath(world.tmp / "squads"),)
    assert Path(scratch).name.startswith("pi-squad-child-")
    assert Path(scratch).parent == world.prompts
    started = world.recorded()
    assert started["env"]["TMPDIR"] == scratch
    assert started["env"]["PI_CODING_AGENT_DIR"] == str(Path(scratch) / "agent")
    assert call.argv[:2] == (sys.executable, str(FAKE))
    assert not Path(scratch).exists(), "the private temporary directory goes with the child"


def test_a_confined_child_gets_a_private_agent_directory_without_code_from_the_users(
    world: World,
) -> None:
    user_agent = world.tmp / "agent"
    (user_agent / "extensions").mkdir(parents=True)
    (user_agent / "extensions" / "planted.ts").write_text("export default () => {}\n")
    (user_agent / "skills").mkdir()
    (user_agent / "bin").mkdir()
    (user_agent / "bin" / "rg").write_text("#!/bin/sh\n")
    (user_agent / "auth.json").write_text('{"anthropic": {"type": "api_key", "key": "k"}}')
    (user_agent / "models.json").write_text('{"providers": {}}')
    # The user trusts the child's project: a private copy would make the child's Pi honour the
    # project's .pi settings and code, which a sibling can write (issue 28, break 1).
    (user_agent / "trust.json").write_text(json.dumps({str(world.cwd): True}))
    elsewhere = world.tmp / "dotfiles-settings.json"
    elsewhere.write_text('{"defaultThinkingLevel": "low"}')
    (user_agent / "settings.json").symlink_to(elsewhere)
    seen: dict[str, object] = {}

    def look_inside(argv: tuple[str, ...], writable: tuple[str, ...]) -> None:
        private = Path(writable[2]) / "agent"
        seen["entries"] = sorted(path.name for path in private.iterdir())
        seen["auth"] = (private / "auth.json").read_text()
        seen["settings"] = (private / "settings.json").read_text()
        seen["settings_is_link"] = (private / "settings.json").is_symlink()
        seen["bin"] = os.readlink(private / "bin")

    isolation = FakeIsolation(on_confine=look_inside)
    request, _ = world.confined_request(world.tmp / "squads")
    _, recorder = world.spawn(confined_runtime(world, isolation), request)
    recorder.until_exit()

    assert seen["entries"] == ["auth.json", "bin", "models.json", "settings.json"]
    assert seen["auth"] == (user_agent / "auth.json").read_text()
    assert seen["settings"] == elsewhere.read_text()
    assert seen["settings_is_link"] is False, "a copy, so the child cannot write through it"
    assert seen["bin"] == str((user_agent / "bin").resolve())
    assert sorted(p.name for p in user_agent.iterdir()) == [
        "auth.json", "bin", "extensions", "models.json", "settings.json", "skills", "trust.json",
    ], "the user's agent directory is read, never changed"  # fmt: skip


def test_a_confined_child_without_a_user_agent_directory_gets_an_empty_private_one(
    world: World,
) -> None:
    isolation = FakeIsolation()
    request, _ = world.confined_request(world.tmp / "squads")
    _, recorder = world.spawn(confined_runtime(world, isolation), request)
    recorder.until_exit()
    assert not (world.tmp / "agent").exists(), "the user's agent directory is not created"
    assert world.recorded()["env"]["PI_CODING_AGENT_DIR"].endswith("/agent")


def test_a_confinement_whose_project_contains_the_squad_root_is_refused_before_start(
    world: World,
) -> None:
    isolation = FakeIsolation()
    # The project would grant the whole squad root.
    request, _ = world.confined_request(world.cwd / ".squads")
    with pytest.raises(ConfinementRefused) as refused:
        confined_runtime(world, isolation).spawn(request, Recorder())
    assert refused.value.code is ErrorCode.ISOLATION_UNSAFE
    assert "contains the squad root" in refused.value.message
    assert isolation.calls == []
    assert not world.record_path.exists(), "nothing was started"
    assert list(world.prompts.iterdir()) == [], "no prompt file or scratch directory left"


def test_a_confinement_without_isolation_is_refused(world: World) -> None:
    request, _ = world.confined_request(world.tmp / "squads")
    with pytest.raises(IsolationUnavailable):
        confined_runtime(world, FakeIsolation.none("fake kernel")).spawn(request, Recorder())
    assert not world.record_path.exists()
