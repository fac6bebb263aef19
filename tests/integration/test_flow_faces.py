"""The faces of flows in the main Pi (docs/flows.md, "Faces inside Pi"): the durable card a
flow call answers with, the tool's abort cancelling the flow, ``/flows`` (list, config,
inspect), and the interactive approval of project agents and presets."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers

from application.main_role import MainRole
from application.ports import SessionEvent, SessionNotification, ToolFailure
from entrypoints.main_bridge_container import MainBridgeContainer
from tests.fakes.child_runtime import FakeChild
from tests.fakes.flows import ScriptedRuntime, answer

WHY = "independent looks"
READ_ONLY = "read,grep,find,ls"
WAIT = 10.0


@pytest.fixture
def scripted() -> ScriptedRuntime:
    return ScriptedRuntime()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def role(tmp_path: Path, project: Path, scripted: ScriptedRuntime) -> Iterator[MainRole]:
    container = MainBridgeContainer()
    container.environ.override(
        providers.Object({"PI_SQUAD_ROOT": str(tmp_path / "root"), "HOME": str(tmp_path)})
    )
    container.cwd.override(providers.Object(str(project)))
    container.driver.runtime.override(providers.Object(scripted.runtime))
    built: MainRole = container.handler(view_interval=0.0)
    yield built
    built.session_shutdown()
    built.detach()


def card_of(result: Any) -> dict[str, Any]:
    entry = result.details["entry"]
    assert entry["customType"] == "pi-squad-flow-card"
    data: dict[str, Any] = entry["data"]
    json.dumps(data)  # what the shim appends must be plain JSON
    return data


def wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, "condition never held"
        time.sleep(0.01)


# -- the card ---------------------------------------------------------------------------------


def test_a_flow_call_answers_with_a_card_of_every_run(
    role: MainRole, scripted: ScriptedRuntime
) -> None:
    scripted.scripts["task-0"] = answer("first", tokens=12, cost=0.002)
    scripted.scripts["task-1"] = lambda child: child.exit(3)
    tasks = [{"agent": "researcher", "task": f"t{i}"} for i in range(2)]
    call = {"tasks": tasks, "why": WHY, "tools": READ_ONLY, "tier": "capable"}
    card = card_of(role.execute_tool("call-1", "flow", call))
    assert (card["mode"], card["status"], card["outcome"]) == ("parallel", "partial", "1 failed")
    first, second = card["runs"]
    assert first["agent"] == "researcher"
    assert (first["status"], first["tokensIn"], first["tokensOut"]) == ("completed", 12, 12)
    assert first["cost"] == pytest.approx(0.002)
    assert isinstance(first["durationMs"], int)
    assert second["error"]["code"] == "CHILD_EXIT_NONZERO"
    lines = card["lines"]
    # Settled: the outcome heads the card, never a ratio that would read as a success total.
    assert lines[0] == "flow parallel — partial: 1 failed"
    assert lines[1].startswith("  ✓ task-0 (researcher) completed ")
    assert "12 in / 12 out · $0.0020" in lines[1]
    assert lines[2].startswith("  ✗ task-1 (researcher) failed CHILD_EXIT_NONZERO ")
    assert lines[3].startswith("      CHILD_EXIT_NONZERO: the child ended before it settled")
    assert lines[-1].startswith("  tokens 12 in / 12 out, $0.0020")
    assert card["flowId"] in lines[-1]


def test_a_settled_fan_out_is_headed_by_its_outcome_and_a_single_run_by_neither(
    role: MainRole,
) -> None:
    tasks = [{"agent": "researcher", "task": f"t{i}"} for i in range(3)]
    call = {"tasks": tasks, "why": WHY, "tools": READ_ONLY, "tier": "capable"}
    assert card_of(role.execute_tool("c1", "flow", call))["lines"][0] == (
        "flow parallel — completed: 3 ok"
    )
    single = card_of(
        role.execute_tool("c2", "flow", {"agent": "researcher", "task": "t", "why": WHY})
    )
    assert single["outcome"] is None
    assert single["lines"][0] == "flow single — completed"


def test_list_and_show_config_answer_without_a_card(role: MainRole) -> None:
    assert "entry" not in role.execute_tool("c1", "flow", {"list": True}).details
    assert "entry" not in role.execute_tool("c2", "flow", {"showConfig": True}).details


def test_the_main_role_registers_the_card_renderer_and_flows_command(role: MainRole) -> None:
    registrations = role.registrations()
    assert registrations.entry_renderers == ("pi-squad-flow-card",)
    assert "flows" in [command.name for command in registrations.commands]


# -- cancelling -------------------------------------------------------------------------------


def hang(child: FakeChild) -> None:
    """A child that works until it is killed."""
    child.use_tool("grep")


def test_the_tools_abort_cancels_its_flow_and_answers_the_partial_results(
    role: MainRole, scripted: ScriptedRuntime
) -> None:
    scripted.scripts["task-1"] = hang
    tasks = [{"agent": "researcher", "task": f"t{i}"} for i in range(3)]
    call = {"tasks": tasks, "why": WHY, "tools": READ_ONLY, "concurrency": 1, "tier": "capable"}
    answered: list[Any] = []
    runner = threading.Thread(target=lambda: answered.append(role.execute_tool("c", "flow", call)))
    runner.start()
    wait_until(lambda: len(scripted.runtime.spawned) == 2)
    role.cancel_tool("other-call")  # another call's abort leaves this flow running
    assert scripted.runtime.spawned[1].alive()
    role.cancel_tool("c")
    runner.join(WAIT)
    (result,) = answered
    card = card_of(result)
    assert card["status"] == "cancelled"
    assert [run["status"] for run in card["runs"]] == ["completed", "failed", "failed"]
    assert [run["error"]["code"] for run in card["runs"][1:]] == ["CHILD_ABORTED"] * 2
    assert scripted.runtime.spawned[1].killed
    assert len(scripted.runtime.spawned) == 2, "nothing spawns after the cancel"
    assert result.texts[0].startswith("Flow parallel cancelled: 1/3 runs completed")


def test_an_abort_that_overtakes_its_call_still_cancels_it(
    role: MainRole, scripted: ScriptedRuntime
) -> None:
    """The shim sends ``execute_tool`` then ``cancel_tool``; the bridge may serve them in
    either order."""
    role.cancel_tool("c")
    result = role.execute_tool("c", "flow", {"agent": "researcher", "task": "t", "why": WHY})
    assert card_of(result)["status"] == "cancelled"
    assert scripted.runtime.spawned == []


def test_the_session_ending_cancels_its_running_flows(
    role: MainRole, scripted: ScriptedRuntime
) -> None:
    scripted.default = hang
    answered: list[Any] = []
    call = {"agent": "researcher", "task": "t", "why": WHY}
    runner = threading.Thread(target=lambda: answered.append(role.execute_tool("c", "flow", call)))
    runner.start()
    wait_until(lambda: len(scripted.runtime.spawned) == 1)
    role.session_shutdown()
    runner.join(WAIT)
    assert card_of(answered[0])["status"] == "cancelled"
    assert scripted.runtime.spawned[0].killed


# -- /flows -----------------------------------------------------------------------------------


def test_flows_lists_agents_and_presets_and_shows_the_config(role: MainRole) -> None:
    listing = role.command("flows", "").notify
    assert listing is not None
    assert listing.startswith("Flow agents (agentScope all):")
    assert "  researcher [bundled] — " in listing
    assert "  scout [bundled] — " in listing
    assert role.command("flows", "list").notify == listing
    config = role.command("flows", "config").notify
    assert config is not None
    assert "  maxParallelTasks: 8" in config
    assert "Model roster:\n  modelTier.fast: " in config
    assert "  modelTier.capable: " in config


def test_flows_inspect_shows_each_running_child_and_what_is_not_started(
    role: MainRole, scripted: ScriptedRuntime
) -> None:
    assert role.command("flows", "inspect").notify == "No flow is running in this session."
    scripted.scripts["task-0"] = hang
    tasks = [{"agent": "researcher", "task": f"t{i}"} for i in range(3)]
    call = {"tasks": tasks, "why": WHY, "tools": READ_ONLY, "concurrency": 1, "tier": "capable"}
    runner = threading.Thread(target=role.execute_tool, args=("call-7", "flow", call))
    runner.start()
    wait_until(lambda: "tool grep" in (role.command("flows", "inspect").notify or ""))
    shown = role.command("flows", "inspect").notify
    assert shown is not None
    assert shown.startswith("flow call call-7:\nflow: 0/3 settled")
    assert "  … task-0 (researcher) running — tool grep" in shown
    assert "  · 2 more not started yet" in shown
    role.cancel_tool("call-7")
    runner.join(WAIT)
    assert role.command("flows", "inspect").notify == "No flow is running in this session."


def test_an_unknown_flows_subcommand_names_the_subcommands(role: MainRole) -> None:
    with pytest.raises(ToolFailure) as refused:
        role.command("flows", "show")
    message = refused.value.message
    assert message.startswith("unknown /flows subcommand 'show'")
    for sub in ("/flows [list]", "/flows config", "/flows inspect", "/flows report FILE"):
        assert sub in message


def test_flows_report_reads_a_trace_file_back(role: MainRole, project: Path) -> None:
    call = {"agent": "researcher", "task": "t", "why": WHY, "traceFile": "runs.jsonl"}
    role.execute_tool("call-t", "flow", call)
    shown = role.command("flows", "report runs.jsonl").notify
    assert shown is not None
    assert shown.startswith("Trace report of runs.jsonl: complete")
    assert "single: 1 runs; execution success 1/1" in shown
    # A span lost after a successful write makes the evidence incomplete.
    rows = (project / "runs.jsonl").read_text().splitlines()
    (project / "runs.jsonl").write_text("\n".join(rows[1:]) + "\n")
    assert "INCOMPLETE evidence" in (role.command("flows", "report runs.jsonl").notify or "")
    with pytest.raises(ToolFailure) as refused:
        role.command("flows", "report missing.jsonl")
    assert refused.value.message.startswith("TRACE_INCOMPLETE")


# -- approving project agents and presets -------------------------------------------------------


def project_agent(project: Path, name: str = "local") -> None:
    agents = project / ".pi" / "squad" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    definition: dict[str, object] = {"name": name, "role": "Local", "tools": ["read", "grep"]}
    definition.update(description="a project agent", prompt="You are local.")
    (agents / f"{name}.json").write_text(json.dumps(definition), encoding="utf-8")


class Person:
    """Attached to the session: answers every ``confirm`` with ``approve``."""

    def __init__(self, role: MainRole, approve: bool | None) -> None:
        self.role = role
        self.approve = approve
        self.asked: list[dict[str, Any]] = []
        role.session_ui(True)
        role.attach(self.seen)

    def seen(self, note: SessionNotification) -> None:
        if note.event is SessionEvent.CONFIRM:
            self.asked.append(dict(note.data))
            if self.approve is not None:
                self.role.ui_answer(str(note.data["requestId"]), self.approve)


def project_call(**extra: object) -> dict[str, Any]:
    tasks = [{"agent": "local", "task": f"t{i}"} for i in range(2)]
    return {"tasks": tasks, "why": WHY, "agentScope": "all", "tier": "capable", **extra}


@pytest.mark.parametrize(
    ("has_ui", "why_refused"),
    [
        pytest.param(False, "a headless run cannot ask", id="headless"),
        # A UI, but no session attached to carry the question.
        pytest.param(True, "approval was declined", id="ui-without-a-session"),
    ],
)
def test_a_session_that_cannot_ask_refuses_a_project_agent_without_spawning(
    role: MainRole, project: Path, scripted: ScriptedRuntime, has_ui: bool, why_refused: str
) -> None:
    project_agent(project)
    role.session_ui(has_ui)
    with pytest.raises(ToolFailure) as refused:
        role.execute_tool("c", "flow", project_call())
    assert refused.value.message.startswith("PROJECT_AGENT_APPROVAL_REQUIRED")
    assert why_refused in refused.value.message
    assert scripted.runtime.spawned == []


def test_an_interactive_session_asks_once_and_runs_when_approved(
    role: MainRole, project: Path, scripted: ScriptedRuntime
) -> None:
    project_agent(project)
    person = Person(role, approve=True)
    result = role.execute_tool("c", "flow", project_call())
    assert card_of(result)["status"] == "completed"
    (asked,) = person.asked  # two tasks, one agent: one question for the call
    assert asked["toolCallId"] == "c"
    assert "agent 'local' (" in asked["message"]
    assert len(scripted.runtime.spawned) == 2


def test_a_declined_approval_refuses_with_the_headless_code_and_spawns_nothing(
    role: MainRole, project: Path, scripted: ScriptedRuntime
) -> None:
    project_agent(project)
    person = Person(role, approve=False)
    with pytest.raises(ToolFailure) as refused:
        role.execute_tool("c", "flow", project_call())
    message = refused.value.message
    assert message.startswith("PROJECT_AGENT_APPROVAL_REQUIRED: $.tasks[0].agent")
    assert "approval was declined" in message
    assert len(person.asked) == 1
    assert scripted.runtime.spawned == []


def test_a_call_refused_for_another_reason_asks_nothing(
    role: MainRole, project: Path, scripted: ScriptedRuntime
) -> None:
    project_agent(project)
    person = Person(role, approve=True)
    call = project_call()
    call["tasks"].append({"agent": "nobody", "task": "t"})
    with pytest.raises(ToolFailure) as refused:
        role.execute_tool("c", "flow", call)
    assert refused.value.message.startswith("UNKNOWN_AGENT")
    assert person.asked == []


def test_a_waived_call_is_not_asked(role: MainRole, project: Path) -> None:
    project_agent(project)
    person = Person(role, approve=False)
    result = role.execute_tool("c", "flow", project_call(confirmProjectAgents=False))
    assert card_of(result)["status"] == "completed"
    assert person.asked == []


def test_a_project_preset_and_its_project_agent_are_asked_in_one_question(
    role: MainRole, project: Path, scripted: ScriptedRuntime
) -> None:
    project_agent(project)
    presets = project / ".pi" / "squad" / "flow-presets"
    presets.mkdir(parents=True)
    (presets / "mine.md").write_text(
        "---\nname: mine\ndescription: a project preset\noverrides: cwd\n---\n"
        '{"agent": "local", "task": "{task}"}\n',
        encoding="utf-8",
    )
    person = Person(role, approve=False)
    call = {"preset": "mine", "task": "look", "why": WHY, "agentScope": "project"}
    with pytest.raises(ToolFailure) as refused:
        role.execute_tool("c", "flow", call)
    assert refused.value.message.startswith("PROJECT_PRESET_APPROVAL_REQUIRED: $.preset")
    (asked,) = person.asked
    assert "preset 'mine' (" in asked["message"]
    assert "agent 'local' (" in asked["message"]
    person.approve = True
    assert card_of(role.execute_tool("c2", "flow", call))["status"] == "completed"
    assert len(scripted.runtime.spawned) == 1


def test_an_abort_while_the_question_is_open_cancels_without_spawning(
    role: MainRole, project: Path, scripted: ScriptedRuntime
) -> None:
    project_agent(project)
    person = Person(role, approve=None)  # never answers
    answered: list[Any] = []
    runner = threading.Thread(
        target=lambda: answered.append(role.execute_tool("c", "flow", project_call()))
    )
    runner.start()
    wait_until(lambda: len(person.asked) == 1)
    role.cancel_tool("c")
    runner.join(WAIT)
    assert card_of(answered[0])["status"] == "cancelled"
    assert scripted.runtime.spawned == []


def test_a_call_aborted_before_it_started_asks_nothing(
    role: MainRole, project: Path, scripted: ScriptedRuntime
) -> None:
    project_agent(project)
    person = Person(role, approve=True)
    role.cancel_tool("c")
    assert card_of(role.execute_tool("c", "flow", project_call()))["status"] == "cancelled"
    assert person.asked == []
    assert scripted.runtime.spawned == []
