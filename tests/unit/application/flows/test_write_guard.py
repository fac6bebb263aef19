"""The shared-write guard on fakes: two write-capable roles that could run at once in one cwd
are refused before either spawns, naming the tools that classified each; each way out works."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from domain.errors import ErrorCode
from tests.fakes.flows import FakeAgentDirectory, agent
from tests.unit.application.flows.engine import WHY, Engine

WRITERS = FakeAgentDirectory(
    bundled=(
        agent("reader", tools=("read", "grep")),
        agent("writer"),  # Pi's default tools: write-capable
        agent("editor", tools=("read", "edit")),
    )
)


def test_two_concurrent_writers_in_one_cwd_are_refused_naming_their_tools(
    tmp_path: Path,
) -> None:
    engine = Engine(tmp_path, WRITERS)
    tasks = [
        {"agent": "writer", "task": "a"},
        {"agent": "reader", "task": "b"},
        {"agent": "editor", "task": "c"},
    ]
    error = engine.refuse({"tasks": tasks, "why": WHY, "tier": "capable"})
    assert error.code is ErrorCode.SHARED_WRITE_CWD
    assert error.path == "$.tasks[2]"
    assert error.problems[0].measured == [
        {"path": "$.tasks[0]", "agent": "writer", "writeTools": ["default"]},
        {"path": "$.tasks[2]", "agent": "editor", "writeTools": ["edit"]},
    ]


def test_a_symlinked_spelling_of_the_same_cwd_is_the_same_cwd(tmp_path: Path) -> None:
    engine = Engine(tmp_path, WRITERS)
    (engine.cwd / "real").mkdir()
    (engine.cwd / "alias").symlink_to(engine.cwd / "real")
    tasks = [
        {"agent": "writer", "task": "a", "cwd": "real"},
        {"agent": "writer", "task": "b", "cwd": "alias"},
    ]
    assert engine.refuse({"tasks": tasks, "why": WHY, "tier": "capable"}).code is (
        ErrorCode.SHARED_WRITE_CWD
    )


@pytest.mark.parametrize(
    "change",
    [
        {"concurrency": 1},
        {"allowSharedWriteCwd": True},
        {"tools": "read,grep"},
        {"cwds": True},
    ],
)
def test_each_way_out_of_the_shared_write_refusal(tmp_path: Path, change: dict[str, Any]) -> None:
    engine = Engine(tmp_path, WRITERS)
    tasks: list[dict[str, Any]] = [
        {"agent": "writer", "task": "a"},
        {"agent": "editor", "task": "b"},
    ]
    call: dict[str, Any] = {"tasks": tasks, "why": WHY, "tier": "capable"}
    if change.pop("cwds", False):
        for index, task in enumerate(tasks):
            (engine.cwd / f"w{index}").mkdir()
            task["cwd"] = f"w{index}"
    call.update(change)
    engine.run(call)
    assert len(engine.scripted.runtime.spawned) == 2


def test_graph_writers_ordered_by_dependency_may_share_a_cwd(tmp_path: Path) -> None:
    engine = Engine(tmp_path, WRITERS)
    nodes: list[dict[str, Any]] = [
        {"id": "a", "agent": "writer", "task": "a"},
        {"id": "b", "agent": "reader", "task": "b"},
        {"id": "c", "agent": "writer", "task": "c", "dependsOn": ["b"]},
    ]
    graph = {"task": "g", "graph": {"nodes": nodes}, "why": WHY}
    # a and c are not ordered: refused; once c depends on a (through b), they never overlap.
    assert engine.refuse(graph).code is ErrorCode.SHARED_WRITE_CWD
    nodes[1]["dependsOn"] = ["a"]
    engine.run(graph)
    assert engine.scripted.order() == ["node-a", "node-b", "node-c"]


# Orchestrate's commander and debrief, read-only, from this directory.
READ_ONLY_ROLES = {"commander": {"agent": "reader"}, "debrief": {"agent": "reader"}}


def test_orchestrate_with_a_write_capable_worker_running_subtasks_together_is_refused(
    tmp_path: Path,
) -> None:
    """Its one worker role stands for every subtask of a wave: two may write at once."""
    engine = Engine(tmp_path, WRITERS)
    fields = {**READ_ONLY_ROLES, "recon": {"agent": "writer"}}
    call = {"task": "Split the module.", "orchestrate": fields}
    error = engine.refuse({**call, "why": WHY, "tier": "capable"})
    assert error.code is ErrorCode.SHARED_WRITE_CWD
    assert error.path == "$.orchestrate.recon"


@pytest.mark.parametrize(
    "change",
    [{"concurrency": 1}, {"allowSharedWriteCwd": True}, {"recon": "reader"}, {"one": True}],
)
def test_each_way_out_of_orchestrates_shared_write_refusal(
    tmp_path: Path, change: dict[str, Any]
) -> None:
    engine = Engine(tmp_path, WRITERS)
    fields: dict[str, Any] = {**READ_ONLY_ROLES, "recon": {"agent": change.pop("recon", "writer")}}
    if change.pop("one", False):
        fields["maxSubtasks"] = 1
    call: dict[str, Any] = {"task": "Split the module.", "orchestrate": fields, "why": WHY}
    engine.run({**call, "tier": "capable", **change})
    assert engine.scripted.runtime.spawned, "admitted: the commander spawned"
