"""``route`` and ``loop`` over real Pi 0.80.10 children on the scripted model (``echo``: each
child answers ``scripted echo: <its prompt>``, so no answer carries a control token on its first
line): the bundled pi-flows agents run, an unreadable controller answer runs the fallback, and a
loop whose judge never says PASS stops at ``maxIterations`` with ``LOOP_DID_NOT_CONVERGE``."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.pi_runtime import PiRuntime
from adapters.scripted_model.policies import ECHO_PREFIX
from tests.e2e.flow_runs import WHY, run_flow

pytestmark = pytest.mark.realpi


def test_a_route_on_real_pi_falls_back_when_the_controller_names_no_candidate(
    tmp_path: Path, runtime: PiRuntime
) -> None:
    route = {"candidates": ["recon", "strategist"], "fallback": "recon"}
    call = {"task": "Where is ROUTE-REAL-7 handled?", "route": route, "why": WHY}
    status, document = run_flow(tmp_path, call)
    assert status == 0, document
    controller, routed = document["results"]
    assert (controller["agent"], routed["agent"]) == ("controller", "recon")
    # The controller was told each candidate with its bundled description.
    assert controller["output"].startswith(ECHO_PREFIX)
    assert "- strategist: Plans the work" in controller["output"]
    assert "ROUTE-REAL-7" in routed["output"]
    assert document["summary"].startswith("Flow route: recon (fallback) completed.")


def test_a_loop_on_real_pi_stops_at_max_iterations_without_a_pass(
    tmp_path: Path, runtime: PiRuntime
) -> None:
    loop = {"body": {"agent": "recon"}, "judge": {"agent": "analyst"}, "maxIterations": 2}
    call = {"task": "Summarise LOOP-REAL-3.", "loop": loop, "why": WHY}
    status, document = run_flow(tmp_path, call)
    assert status == 1, document
    keys = [r["key"] for r in document["results"]]
    assert keys == ["body-1", "judge-1", "body-2", "judge-2", "loop"]
    assert document["results"][-1]["error"]["code"] == "LOOP_DID_NOT_CONVERGE"
    # The second body was given the first body's output and the judge's critique, fenced.
    second = document["results"][2]["output"]
    assert second.count("<<<UNTRUSTED DATA") >= 2


ROUTER = """---
name: controller
description: Scripted router for the route end-to-end test.
tools: none
---
You route tasks.
scripted-policy: reply
scripted-reply: ROUTE: strategist
"""


def test_a_route_on_real_pi_runs_the_candidate_a_project_controller_chose(
    tmp_path: Path, runtime: PiRuntime
) -> None:
    """A pi-flows agent file from the project's ``.pi/flow-agents/`` (approved for this
    headless run by ``confirmProjectAgents: false``) shadows the bundled controller and names
    one candidate; that candidate, not the fallback, runs the task."""
    agents = tmp_path / "project" / ".pi" / "flow-agents"
    agents.mkdir(parents=True)
    (agents / "controller.md").write_text(ROUTER, encoding="utf-8")
    route = {"candidates": ["recon", "strategist"], "fallback": "recon"}
    call = {
        "task": "Plan ROUTE-REAL-8.",
        "route": route,
        "agentScope": "all",
        "confirmProjectAgents": False,
        "why": WHY,
    }
    status, document = run_flow(tmp_path, call)
    assert status == 0, document
    controller, routed = document["results"]
    assert controller["output"] == "ROUTE: strategist"
    assert routed["agent"] == "strategist"
    assert "ROUTE-REAL-8" in routed["output"]
    assert document["summary"].startswith(
        "Flow route: strategist (chosen by the controller) completed."
    )
