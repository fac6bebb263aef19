"""The flow engine on fakes: every refusal happens before any spawn (agents out of scope,
unapproved project agents, fan-outs over the cap or unsized), and ``showConfig`` states the
caps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from domain.errors import ErrorCode
from domain.flows.errors import FlowError
from tests.fakes.clock import FakeClock
from tests.fakes.flows import FakeAgentDirectory, agent
from tests.host_fs import host_file_system
from tests.unit.application.flows.engine import SINGLE, WHY, Engine


@pytest.mark.parametrize(
    ("document", "code"),
    [
        ({"agent": "researcher", "task": "t"}, ErrorCode.WHY_REQUIRED),
        ({**SINGLE, "why": "  "}, ErrorCode.WHY_REQUIRED),
        ({**SINGLE, "concurrency": 9}, ErrorCode.INVALID_CONCURRENCY),
        (
            {"tasks": [{"agent": "researcher", "task": "t"}] * 9, "why": WHY},
            ErrorCode.TOO_MANY_TASKS,
        ),
        ({**SINGLE, "agentScope": "everyone"}, ErrorCode.INVALID_SCOPE),
        ({**SINGLE, "agent": "nobody"}, ErrorCode.UNKNOWN_AGENT),
        ({**SINGLE, "tasks": []}, ErrorCode.INVALID_MODE),
        ({**SINGLE, "vote": {}}, ErrorCode.INVALID_MODE),
        ({**SINGLE, "timeoutMs": 10}, ErrorCode.FLOW_INVALID),
        ({**SINGLE, "cwd": "missing-dir"}, ErrorCode.FLOW_INVALID),
        ({**SINGLE, "tools": "read,bash-ro"}, ErrorCode.BASH_READONLY_UNENFORCEABLE),
        (
            {"task": "g", "graph": {"nodes": [{"id": "a", "agent": "x"}]}, "why": WHY},
            ErrorCode.GRAPH_INVALID,
        ),
        (
            {
                "task": "g",
                "graph": {
                    "nodes": [{"id": "a", "agent": "researcher", "task": "t", "dependsOn": ["a"]}]
                },
                "why": WHY,
            },
            ErrorCode.GRAPH_CYCLE,
        ),
        (
            {
                "task": "g",
                "chain": [{"agent": "researcher", "task": "a"}, {"agent": "ghost", "task": "b"}],
                "why": WHY,
            },
            ErrorCode.UNKNOWN_AGENT,
        ),
    ],
)
def test_every_refusal_happens_before_any_spawn(
    engine: Engine, document: dict[str, Any], code: ErrorCode
) -> None:
    assert engine.refuse(document).code is code


def test_an_unknown_agent_names_the_agents_in_scope(engine: Engine) -> None:
    error = engine.refuse({**SINGLE, "agent": "nobody"}).document()
    assert (error["path"], error["measured"], error["allowed"]) == (
        "$.agent",
        "nobody",
        ["recon", "researcher", "reviewer"],
    )
    assert error["retryable"] is False


def test_agent_scope_decides_which_sources_are_visible(tmp_path: Path) -> None:
    agents = FakeAgentDirectory(user=(agent("mine"),), project=(agent("theirs"),))
    engine = Engine(tmp_path, agents)
    assert engine.refuse({**SINGLE, "agent": "theirs"}).code is ErrorCode.UNKNOWN_AGENT
    listed = engine.run({"list": True, "agentScope": "project"}).document()
    assert [a["name"] for a in listed["agents"]] == ["recon", "researcher", "reviewer", "theirs"]
    listed = engine.run({"list": True}).document()
    assert [a["name"] for a in listed["agents"]] == ["mine", "recon", "researcher", "reviewer"]


def test_a_project_agent_needs_explicit_approval_headless(tmp_path: Path) -> None:
    engine = Engine(tmp_path, FakeAgentDirectory(project=(agent("theirs"),)))
    call = {**SINGLE, "agent": "theirs", "agentScope": "all"}
    assert engine.refuse(call).code is ErrorCode.PROJECT_AGENT_APPROVAL_REQUIRED
    engine.run({**call, "confirmProjectAgents": False})
    assert engine.scripted.order() == ["single"]


def test_show_config_states_the_caps_and_each_tiers_reason(engine: Engine) -> None:
    document = engine.run({"showConfig": True}, session_model="prov/model-x").document()
    assert document["config"]["maxParallelTasks"] == 8
    assert document["config"]["defaultConcurrency"] == 4
    assert document["config"]["modelVisibleOutputCapBytes"] == 51_200
    roster = document["modelRoster"]
    assert [line.split(":")[0] for line in roster] == [
        "modelTier.fast",
        "modelTier.capable",
        "modelTier.deep",
        "modelRoster.issue",
        "modelRoster.issue",
    ]
    assert roster[1].startswith("modelTier.capable: prov/model-x — ")
    assert all(" — " in line for line in roster[:3])
    # Nothing is known about models here: fast and deep say why they are not derived.
    assert roster[3].startswith("modelRoster.issue: modelTier.fast not derived: ")
    assert roster[4].startswith("modelRoster.issue: modelTier.deep not derived: ")
    assert engine.scripted.runtime.spawned == []


def test_the_dispatcher_refuses_a_batch_over_the_fan_out_cap(engine: Engine) -> None:
    from application.flows.dispatch import ChildDispatcher, DispatchSettings
    from domain.flows.call_roles import FlowTask
    from domain.flows.runs import ChildJob

    settings = DispatchSettings("f", str(engine.root), 8, 1.0)
    dispatcher = ChildDispatcher(
        engine.scripted.runtime,
        FakeClock(),
        host_file_system(),
        settings,
        resolve=lambda r: None,  # type: ignore[arg-type,return-value]
    )
    jobs = [ChildJob(f"j{i}", FlowTask("researcher", "t"), "t") for i in range(9)]
    with pytest.raises(FlowError) as caught:
        dispatcher(jobs)
    assert caught.value.code is ErrorCode.TOO_MANY_TASKS
    assert engine.scripted.runtime.spawned == []


def test_a_parallel_fan_out_must_size_every_task_before_any_spawn(engine: Engine) -> None:
    tasks = [
        {"agent": "researcher", "task": "a", "tier": "fast"},
        {"agent": "researcher", "task": "b", "thinking": "high"},
        {"agent": "researcher", "task": "c"},
    ]
    error = engine.refuse({"tasks": tasks, "why": WHY}).document()
    assert error["code"] == "PARALLEL_SIZING_REQUIRED"
    assert [p["path"] for p in error["problems"]] == ["$.tasks[1]", "$.tasks[2]"]
    assert error["measured"] == "thinking only"  # thinking alone does not count
    assert error["allowed"] == ["tier", "model"]
    assert "thinking alone does not size a child" in error["message"]


@pytest.mark.parametrize(
    "sizing",
    [
        {"tier": "deep"},
        {"model": "prov/m"},
        {"tasks": [{"agent": "researcher", "task": "a", "model": "m"}] * 2},
        {"tasks": [{"agent": "researcher", "task": "a"}]},  # one task: nothing to size against
    ],
)
def test_each_way_to_size_a_parallel_fan_out(engine: Engine, sizing: dict[str, Any]) -> None:
    call = {"tasks": [{"agent": "researcher", "task": f"t{i}"} for i in range(2)], "why": WHY}
    engine.run({**call, **sizing})
    assert engine.scripted.runtime.spawned
