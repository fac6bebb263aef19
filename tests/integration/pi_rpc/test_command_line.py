"""``adapters.pi_rpc`` against a stand-in ``pi`` executable (tests/fakes/fake_pi_executable.py):
the command line, environment and prompt file a child starts with, and the order of a settled
child's events."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs
import pytest

from adapters.pi_rpc import child_argv
from adapters.pi_rpc.command_line import NOTHING_DISCOVERED, child_environment
from application.ports import (
    AssistantText,
    Exited,
    ForkSession,
    NewSession,
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
from tests.fakes import fake_pi_executable as fake
from tests.integration.pi_rpc.support import EXTENSION, REQUEST_ENV, SYSTEM_PROMPT, World, gone

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX signals and /proc")


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


def bare_request(**fields: Any) -> SpawnRequest:
    """A request of no particular child, with ``fields`` in place of its defaults."""
    values: dict[str, Any] = {
        "squad_id": "s",
        "task_id": "t",
        "cwd": "/w",
        "session": NewSession("/d"),
        "system_prompt": "",
        "first_prompt": "go",
        "environment": {},
    }
    return SpawnRequest(**(values | fields))


def test_command_line_variants() -> None:
    request = bare_request(tools=(), provider="other")
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
    request = bare_request(session=ResumeSession("/s.jsonl"), closed_context=closed_context)
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
