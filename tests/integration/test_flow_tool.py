"""The main Pi's ``flow`` tool: registered beside the squad tools, one call per execution, the
live tool row (``k/n settled``, then the outcome), and refusals as tool failures carrying the
catalogue's advice."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers

from application.main_role import MainRole
from application.ports import SessionEvent, SessionNotification, ToolFailure
from domain.flows.models import AvailableModels, KnownModel, SessionModels
from entrypoints.main_bridge_container import MainBridgeContainer
from tests.fakes.child_runtime import FakeChild
from tests.fakes.flows import ScriptedRuntime, answer

WHY = "independent looks"
READ_ONLY = "read,grep,find,ls"


@pytest.fixture
def scripted() -> ScriptedRuntime:
    return ScriptedRuntime()


@pytest.fixture
def role(tmp_path: Path, scripted: ScriptedRuntime) -> Iterator[MainRole]:
    (tmp_path / "project").mkdir()
    container = MainBridgeContainer()
    container.environ.override(
        providers.Object({"PI_SQUAD_ROOT": str(tmp_path / "root"), "HOME": str(tmp_path)})
    )
    container.cwd.override(providers.Object(str(tmp_path / "project")))
    container.driver.runtime.override(providers.Object(scripted.runtime))
    built: MainRole = container.handler(view_interval=0.0)
    yield built
    built.session_shutdown()
    built.detach()


def rows(notes: list[SessionNotification]) -> list[str]:
    return [str(n.data["text"]) for n in notes if n.event is SessionEvent.TOOL_UPDATE]


def test_the_flow_tool_is_registered_with_its_advertised_schema(role: MainRole) -> None:
    (tool,) = [t for t in role.registrations().tools if t.name == "flow"]
    assert tool.parameters["additionalProperties"] is False
    assert {"why", "agent", "tasks", "chain", "graph", "preset"} <= set(
        tool.parameters["properties"]
    )


def test_the_main_sessions_tiers_are_the_models_it_said_it_runs(
    role: MainRole, scripted: ScriptedRuntime
) -> None:
    (tool,) = [t for t in role.registrations().tools if t.name == "flow"]
    (command,) = [c for c in role.registrations().commands if c.name == "flows"]
    assert tool.session_models
    assert command.session_models
    available = AvailableModels(
        (
            KnownModel("acme", "mid", True, 1.0, 5.0),
            KnownModel("acme", "small", True, 0.1, 0.4),
        ),
        "this session's model registry",
    )
    role.session_models(SessionModels("acme/mid", "acme", "xhigh", available))
    config = role.command("flows", "config").notify or ""
    # xhigh is not in mid's map: the level Pi runs it at is high.
    assert "modelTier.capable: acme/mid, thinking high — the model this session is running" in (
        config
    )
    assert "modelTier.fast: acme/small, thinking low — cheapest model this install can run" in (
        config
    )
    call = {"agent": "researcher", "task": "t", "why": WHY}
    role.execute_tool("call-1", "flow", {**call, "tier": "capable"})
    role.execute_tool("call-2", "flow", call)
    first, second = scripted.runtime.spawned
    assert (first.request.model, first.request.thinking) == ("acme/mid", "high")
    # Without a tier the session model is still the last fallback, at Pi's own level.
    assert (second.request.model, second.request.thinking) == ("acme/mid", None)


def test_a_parallel_flow_shows_settled_counts_then_its_outcome(
    role: MainRole, scripted: ScriptedRuntime
) -> None:
    notes: list[SessionNotification] = []
    role.attach(notes.append)
    scripted.scripts["task-1"] = answer("second")
    tasks = [{"agent": "researcher", "task": f"t{i}"} for i in range(3)]
    call: dict[str, Any] = {
        "tasks": tasks,
        "why": WHY,
        "tools": READ_ONLY,
        "concurrency": 1,
        "tier": "capable",
    }
    result = role.execute_tool("call-1", "flow", call)
    text = result.texts[0]
    assert text.startswith("Flow parallel: 3/3 succeeded.")
    assert "### task-1 researcher — completed\n\nsecond" in text
    shown = rows(notes)
    assert shown[0].startswith("flow: 0/3 settled")
    assert any(row.startswith("flow: 2/3 settled") for row in shown)
    assert shown[-1].startswith("flow: 3 ok")
    assert "tokens 30 in / 30 out" in shown[-1]


def test_a_single_run_row_shows_no_ratio(role: MainRole) -> None:
    notes: list[SessionNotification] = []
    role.attach(notes.append)
    role.execute_tool("call-2", "flow", {"agent": "researcher", "task": "t", "why": WHY})
    assert all(row.splitlines()[0] == "flow" for row in rows(notes))


def test_the_row_shows_the_ceilings_before_the_first_child_starts(
    role: MainRole, scripted: ScriptedRuntime
) -> None:
    notes: list[SessionNotification] = []
    role.attach(notes.append)
    call = {"agent": "researcher", "task": "t", "why": WHY, "maxCostUsd": 0.5}
    answer = role.execute_tool("call-b", "flow", call)
    shown = rows(notes)
    # The first row drawn is the ceiling's, before any child started; every later row keeps it.
    first = shown[0].splitlines()
    assert first[:2] == ["flow", "  budget (flow): maxCostUsd $0.5000"]
    assert not any("running" in line for line in first)
    assert all("  budget (flow): maxCostUsd $0.5000" in row for row in shown)
    assert "budget (flow): maxCostUsd $0.5000" in answer.texts[0]
    card = answer.details["entry"]["data"]
    assert card["budget"]["ceilings"][0]["maxCostUsd"] == 0.5
    assert "  budget (flow): maxCostUsd $0.5000" in card["lines"]


def test_a_refused_flow_is_a_tool_failure_with_the_catalogue_advice(
    role: MainRole, scripted: ScriptedRuntime
) -> None:
    with pytest.raises(ToolFailure) as refused:
        role.execute_tool("call-3", "flow", {"agent": "researcher", "task": "t"})
    message = refused.value.message
    assert message.startswith("WHY_REQUIRED: $.why")
    assert "Fix: add `why`" in message
    assert "Retryable unchanged: no" in message
    assert scripted.runtime.spawned == []


def test_two_flow_calls_may_run_at_once(role: MainRole, scripted: ScriptedRuntime) -> None:
    scripted.delay = 0.05
    answers: list[str] = []

    def call(index: int) -> None:
        document = {"agent": "researcher", "task": f"t{index}", "why": WHY}
        answers.append(role.execute_tool(f"c{index}", "flow", document).texts[0])

    threads = [threading.Thread(target=call, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(answers) == 2
    assert all(a.startswith("Flow single: completed.") for a in answers)


def test_a_chain_between_steps_keeps_the_ratio_not_an_outcome(role: MainRole) -> None:
    notes: list[SessionNotification] = []
    role.attach(notes.append)
    chain = [{"agent": "researcher", "task": "a"}, {"agent": "reviewer", "task": "b"}]
    role.execute_tool("call-4", "flow", {"task": "g", "chain": chain, "why": WHY})
    shown = rows(notes)
    headers = [row.splitlines()[0] for row in shown]
    distinct = [h for i, h in enumerate(headers) if i == 0 or headers[i - 1] != h]
    assert distinct == ["flow: 0/2 settled", "flow: 1/2 settled", "flow: 2/2 settled", "flow: 2 ok"]
    # Between the stages the ratio stays while step 2 runs: no outcome is announced early.
    assert any(
        row.startswith("flow: 1/2 settled") and "step-2 (reviewer) running" in row for row in shown
    )


def test_the_row_shows_a_running_childs_current_tool_and_latest_message(
    role: MainRole, scripted: ScriptedRuntime
) -> None:
    notes: list[SessionNotification] = []
    role.attach(notes.append)

    def work(child: FakeChild) -> None:
        child.use_tool("grep")
        child.say("Looking at parse.py now\nmore")
        child.say("done")
        child.settle()

    scripted.scripts["single"] = work
    role.execute_tool("call-5", "flow", {"agent": "researcher", "task": "t", "why": WHY})
    shown = rows(notes)
    assert any("… single (researcher) running — tool grep" in row for row in shown)
    assert any("running — Looking at parse.py now" in row for row in shown)
