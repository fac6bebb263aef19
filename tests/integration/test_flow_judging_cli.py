"""``route`` and ``loop`` through ``pi-squad flow`` with the bundled pi-flows agents and the
scripted fake child runtime: a call copied from pi-flows' documentation runs unchanged, and a
flow the control tokens could not settle exits 1 naming its code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.flows import answer
from tests.integration.flow_cli_support import FlowCli

WHY = "independent verification"


@pytest.fixture
def cli(tmp_path: Path) -> FlowCli:
    return FlowCli(tmp_path)


def flow(cli: FlowCli, capsys: pytest.CaptureFixture[str], call: dict[str, Any]) -> Any:
    status = cli.run("--call", cli.call_file({**call, "why": WHY}), "--json", "--model", "p/m")
    document = json.loads(capsys.readouterr().out)
    return status, document


def test_a_route_call_runs_the_controller_then_the_agent_it_chose(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    cli.scripted.scripts["controller"] = answer("ROUTE: recon")
    cli.scripted.scripts["routed"] = answer("main is in src/app.py:12")
    call = {"task": "Where is main?", "route": {"candidates": ["recon", "strategist"]}}
    status, document = flow(cli, capsys, call)
    assert status == 0
    assert (document["mode"], document["status"]) == ("route", "completed")
    assert [(r["key"], r["agent"]) for r in document["results"]] == [
        ("controller", "controller"),
        ("routed", "recon"),
    ]
    controller, routed = cli.scripted.runtime.spawned
    assert "- strategist: Plans the work" in controller.request.first_prompt
    assert controller.request.tools == ()  # the bundled controller has no tools
    assert routed.request.tools == ("read", "grep", "find", "ls")


def test_an_unresolved_route_exits_1_with_route_unresolved(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    cli.scripted.scripts["controller"] = answer("I am not sure which agent fits.")
    call = {"task": "Where is main?", "route": {"candidates": ["recon"]}}
    status, document = flow(cli, capsys, call)
    assert status == 1
    assert document["status"] == "failed"
    assert document["results"][-1]["error"]["code"] == "ROUTE_UNRESOLVED"
    assert len(cli.scripted.runtime.spawned) == 1


def test_a_loop_call_runs_body_and_judge_until_the_judge_passes(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    cli.scripted.scripts["judge-1"] = answer("VERDICT: REVISE\nMissing the empty-file case.")
    cli.scripted.scripts["judge-2"] = answer("VERDICT: PASS")
    call = {
        "task": "Fix the parser.",
        "loop": {"body": {"agent": "operator"}, "judge": {"agent": "redteam"}},
    }
    status, document = flow(cli, capsys, call)
    assert status == 0
    assert [r["key"] for r in document["results"]] == ["body-1", "judge-1", "body-2", "judge-2"]
    second_body = cli.scripted.runtime.spawned[2]
    assert "Missing the empty-file case." in second_body.request.first_prompt


def test_a_loop_that_never_converges_exits_1_keeping_every_output(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    call = {"task": "Fix it.", "loop": {"body": {"agent": "operator"}, "maxIterations": 2}}
    status, document = flow(cli, capsys, call)
    assert status == 1
    assert [r["key"] for r in document["results"]] == ["body-1", "body-2", "loop"]
    assert document["results"][-1]["error"]["code"] == "LOOP_DID_NOT_CONVERGE"
    assert all(r["output"] for r in document["results"][:2])
