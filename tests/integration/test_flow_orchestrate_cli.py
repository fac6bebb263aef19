"""``orchestrate`` and the ``map-codebase`` preset through ``pi-squad flow`` with the bundled
pi-flows agents and the scripted fake child runtime: the commander's plan runs in dependency
waves, a failed subtask strands its dependents (never spawned) and the debrief is told what did
not complete, a plan the budget cannot hold spawns no worker, and what cannot settle exits 1
naming its code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakes.child_runtime import FakeChild
from tests.fakes.flows import answer
from tests.integration.flow_cli_support import FlowCli, run_call

WHY = "independent verification"
PLAN = [
    {"id": "schema", "objective": "Map the database schema"},
    {"id": "api", "objective": "Map the HTTP API"},
    {"id": "flows", "objective": "Trace the invoice flow", "dependsOn": ["schema", "api"]},
    {"id": "terms", "objective": "List the domain terms"},
]


@pytest.fixture
def cli(tmp_path: Path) -> FlowCli:
    return FlowCli(tmp_path)


def crashed(child: FakeChild) -> None:
    child.exit(1)


def test_the_plan_runs_in_waves_and_the_debrief_synthesises_the_terminal_results(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    cli.scripted.scripts["decompose"] = answer(json.dumps(PLAN))
    cli.scripted.scripts["worker-schema"] = answer("invoice table at db/schema.sql:12")
    cli.scripted.scripts["worker-flows"] = answer("POST /bill writes invoice rows")
    cli.scripted.scripts["synthesis-1"] = answer("Billing map: ...")
    status, document = run_call(cli, capsys, {"task": "Map billing.", "orchestrate": {}}, WHY)
    assert status == 0
    assert (document["mode"], document["status"]) == ("orchestrate", "completed")
    assert document["summary"].startswith(
        "Flow orchestrate: 4 subtasks, 4 succeeded, 0 failed, 0 stranded, synthesized by debrief."
    )
    order = cli.scripted.order()
    # The first wave's workers run together (their order is the scheduler's), then flows.
    assert order[0] == "decompose"
    assert sorted(order[1:4]) == ["worker-api", "worker-schema", "worker-terms"]
    assert order[4:] == ["worker-flows", "synthesis-1"]
    spawned = {child.task_id: child.request for child in cli.scripted.runtime.spawned}
    assert "invoice table at db/schema.sql:12" in spawned["worker-flows"].first_prompt
    debrief = spawned["synthesis-1"].first_prompt
    assert "POST /bill writes invoice rows" in debrief
    assert "## Subtasks not completed" not in debrief


def test_a_failed_subtask_strands_its_dependent_and_the_partial_flow_exits_1(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    cli.scripted.scripts["decompose"] = answer(json.dumps(PLAN))
    cli.scripted.scripts["worker-api"] = crashed
    status, document = run_call(cli, capsys, {"task": "Map billing.", "orchestrate": {}}, WHY)
    assert (status, document["status"]) == (1, "partial")
    assert document["summary"].startswith(
        "Flow orchestrate: 4 subtasks, 2 succeeded, 1 failed, 1 stranded, synthesized by debrief."
    )
    assert "worker-flows" not in cli.scripted.order()
    stranded = next(r for r in document["results"] if r["key"] == "worker-flows")
    assert stranded["status"] == "skipped"
    assert stranded["error"]["message"] == "stranded: dependency 'api' did not complete"
    debrief = cli.scripted.runtime.spawned[-1].request.first_prompt
    assert "## Subtasks not completed" in debrief
    assert "- flows (stranded: dependency 'api' did not complete)" in debrief


def test_a_plan_the_budget_cannot_hold_spawns_no_worker_and_exits_1(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    # The commander generated 100 tokens; four subtasks of weight 1 project 500 > 300.
    cli.scripted.scripts["decompose"] = answer(json.dumps(PLAN), tokens=100)
    call = {"task": "Map billing.", "orchestrate": {}, "maxGeneratedTokens": 300}
    status, document = run_call(cli, capsys, call, WHY)
    assert status == 1
    assert cli.scripted.order() == ["decompose"]
    assert document["results"][-1]["error"]["code"] == "BUDGET_HEADROOM_EXCEEDED"


def test_a_cyclic_plan_exits_1_with_decomposition_cycle(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    cyclic = [
        {"id": "a", "objective": "x", "dependsOn": ["b"]},
        {"id": "b", "objective": "y", "dependsOn": ["a"]},
    ]
    cli.scripted.scripts["decompose"] = answer(json.dumps(cyclic))
    status, document = run_call(cli, capsys, {"task": "Map.", "orchestrate": {}}, WHY)
    assert status == 1
    assert document["results"][-1]["error"]["code"] == "DECOMPOSITION_CYCLE"


def test_the_map_codebase_preset_runs_at_most_four_read_only_recon_subtasks(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    areas = [f"area {i}" for i in range(1, 7)]
    cli.scripted.scripts["decompose"] = answer(json.dumps(areas))
    status, document = run_call(
        cli, capsys, {"preset": "map-codebase", "task": "the billing service"}, WHY
    )
    assert status == 0
    assert document["mode"] == "orchestrate"
    spawned = {child.task_id: child.request for child in cli.scripted.runtime.spawned}
    assert sorted(spawned) == [
        "decompose",
        "synthesis-1",
        "worker-1",
        "worker-2",
        "worker-3",
        "worker-4",
    ]
    commander = spawned["decompose"].first_prompt
    assert commander.startswith("## Goal\nMap this codebase for: the billing service")
    assert "at most 4 subtasks" in commander
    worker = spawned["worker-1"]
    assert worker.tools == ("read", "grep", "find", "ls")
    assert worker.thinking == "low"
    assert "file:line evidence" in worker.first_prompt
    assert document["summary"].startswith("Flow orchestrate: 4 subtasks, 4 succeeded")
