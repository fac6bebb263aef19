"""``workflow`` through ``pi-squad flow`` with the bundled agents and the scripted fake child
runtime: phases in order with the real shell gate, the state file on disk (owner-only), a
headless approval kept for later, and a driving process SIGKILLed mid-workflow then resumed
from its last completed phase."""

from __future__ import annotations

import json
import signal
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.flows import answer
from tests.integration.flow_cli_support import FlowCli, kill, run_call, started_kill_host

WHY = "the phases and their gates are part of correctness"
STATE = ".pi/flow-workflows/ship.json"


@pytest.fixture
def cli(tmp_path: Path) -> FlowCli:
    return FlowCli(tmp_path)


def phases(*extra: dict[str, Any], resume: bool = False) -> dict[str, Any]:
    return {
        "task": "Fix the parser.",
        "workflow": {
            "phases": [
                {"id": "a", "agent": "recon", "task": "map {task}"},
                {"id": "b", "agent": "recon", "task": "plan from {phase.a}"},
                *extra,
            ],
            "stateFile": STATE,
            "resume": resume,
        },
    }


def test_a_workflow_runs_its_phases_and_gate_and_keeps_its_state_owner_only(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    cli.scripted.scripts["phase-a"] = answer("MAP")
    call = phases({"id": "c", "agent": "recon", "task": "check", "checkCommand": "touch gated"})
    status, document = run_call(cli, capsys, call, WHY)
    assert status == 0
    assert (document["mode"], document["status"]) == ("workflow", "completed")
    assert [r["key"] for r in document["results"]] == ["phase-a", "phase-b", "phase-c"]
    assert "MAP" in cli.scripted.runtime.spawned[1].request.first_prompt
    assert (cli.cwd / "gated").exists()
    state = cli.cwd / STATE
    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    assert stat.S_IMODE(state.parent.stat().st_mode) == 0o700
    assert json.loads(state.read_text())["completedAt"] is not None


def test_a_failing_gate_exits_1_with_workflow_gate_failed(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    call = phases({"id": "c", "agent": "recon", "task": "t", "checkCommand": "echo red; exit 4"})
    status, document = run_call(cli, capsys, call, WHY)
    assert status == 1
    gate = document["results"][-1]
    assert (gate["key"], gate["error"]["code"]) == ("gate-c", "WORKFLOW_GATE_FAILED")
    assert gate["output"].strip() == "red"


def test_headless_an_approval_phase_exits_1_and_keeps_the_state(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    call = phases({"id": "go", "approval": {"message": "Ship it?"}})
    status, document = run_call(cli, capsys, call, WHY)
    assert status == 1
    assert document["results"][-1]["error"]["code"] == "WORKFLOW_APPROVAL_REQUIRED"
    recorded = json.loads((cli.cwd / STATE).read_text())
    assert recorded["phases"]["go"]["status"] == "awaiting-approval"
    assert recorded["phases"]["b"]["status"] == "completed"


def test_a_sigkilled_workflow_resumes_from_its_last_completed_phase(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    call = cli.call_file({**phases(), "why": WHY})
    process = started_kill_host("tests.integration.workflow_kill_host", cli, call)
    assert kill(process) == -signal.SIGKILL
    recorded = json.loads((cli.cwd / STATE).read_text())
    assert list(recorded["phases"]) == ["a"]
    status, document = run_call(cli, capsys, phases(resume=True), WHY)
    assert status == 0
    assert [child.task_id for child in cli.scripted.runtime.spawned] == ["phase-b"]
    assert [(r["key"], r["status"]) for r in document["results"]] == [
        ("phase-a", "completed"),
        ("phase-b", "completed"),
    ]
    # Phase b was given phase a's output as the killed run recorded it.
    assert "FIRST-PHASE" in cli.scripted.runtime.spawned[0].request.first_prompt
    # Resumed again once completed: audit only, nothing spawns.
    status, document = run_call(cli, capsys, phases(resume=True), WHY)
    assert status == 0
    assert "audit only" in document["summary"]
    assert len(cli.scripted.runtime.spawned) == 1
