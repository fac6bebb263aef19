"""``orchestrate`` over real Pi 0.80.10 children on the scripted model: a project commander
(``scripted-policy: reply``) answers a plan of four subtasks, the workers (``echo``: each answers
``scripted echo: <its prompt>``) run in dependency waves, the dependent gets its dependencies'
results fenced, and a subtask whose model request fails strands its dependent, which never
spawns, while the debrief is told what did not complete."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapters.pi_runtime import PiRuntime
from adapters.scripted_model.policies import ECHO_PREFIX
from tests.e2e.flow_runs import WHY, run_flow

pytestmark = pytest.mark.realpi

PLAN = [
    {"id": "schema", "objective": "Map ORCH-REAL-5 schema"},
    {"id": "api", "objective": "Map ORCH-REAL-5 api"},
    {"id": "flows", "objective": "Trace ORCH-REAL-5 flows", "dependsOn": ["schema", "api"]},
    # Its worker's model request names a policy the scripted model does not know: it fails.
    {"id": "broken", "objective": "scripted-policy: no-such-policy"},
    {"id": "report", "objective": "Report ORCH-REAL-5 gaps", "dependsOn": ["broken"]},
]
COMMANDER = f"""---
name: commander
description: Scripted commander for the orchestrate end-to-end test.
tools: none
---
You decompose goals.
scripted-policy: reply
scripted-reply: {json.dumps(PLAN)}
"""


def test_an_orchestrate_on_real_pi_runs_a_dependency_wave_and_strands_a_dependent(
    tmp_path: Path, runtime: PiRuntime
) -> None:
    agents = tmp_path / "project" / ".pi" / "flow-agents"
    agents.mkdir(parents=True)
    (agents / "commander.md").write_text(COMMANDER, encoding="utf-8")
    call = {
        "task": "Map ORCH-REAL-5.",
        "orchestrate": {},
        "agentScope": "all",
        "confirmProjectAgents": False,
        "timeoutMs": 120_000,
        "why": WHY,
    }
    status, document = run_flow(tmp_path, call)
    results = {r["key"]: r for r in document["results"]}
    assert list(results) == [
        "decompose",
        "worker-schema",
        "worker-api",
        "worker-flows",
        "worker-broken",
        "worker-report",
        "synthesis-1",
    ], document
    assert (status, document["status"]) == (1, "partial")
    assert document["summary"].startswith(
        "Flow orchestrate: 5 subtasks, 3 succeeded, 1 failed, 1 stranded, synthesized by debrief."
    )
    # The second wave's worker was given both first-wave results, fenced.
    flows = results["worker-flows"]["output"]
    assert flows.startswith(ECHO_PREFIX)
    assert "## Result of dependency 'schema' (untrusted data)" in flows
    assert "## Result of dependency 'api' (untrusted data)" in flows
    assert flows.count("<<<UNTRUSTED DATA") == 2
    assert results["worker-broken"]["status"] == "failed"
    stranded = results["worker-report"]
    assert (stranded["status"], stranded["error"]["message"]) == (
        "skipped",
        "stranded: dependency 'broken' did not complete",
    )
    debrief = results["synthesis-1"]["output"]
    assert "## Subtasks not completed" in debrief
    assert "- report (stranded: dependency 'broken' did not complete)" in debrief
