"""``workflow`` in a real interactive Pi 0.80.10 (docs/flows.md, "workflow"): the scripted model
calls ``flow`` with a workflow whose second phase is an approval; the first phase's real child
runs, Pi shows the approval in its confirm dialog, and Pi is SIGKILLed with the question open.
The same call with ``"resume": true`` in a new Pi asks again without re-running the first
phase; approved, the gated phase runs and the receipt is spent."""

from __future__ import annotations

import json
import os
import signal
from typing import Any

import pytest

from tests.e2e.flow_faces.support import WHY, FacesWorld, flow_terminal

pytestmark = pytest.mark.realpi

STATE = "workflow-e2e.json"


def arguments(*, resume: bool) -> dict[str, Any]:
    return {
        "task": "WORKFLOW-E2E",
        "why": WHY,
        "workflow": {
            "phases": [
                {"id": "plan", "agent": "researcher", "task": "scripted-policy: echo\nPLAN-7"},
                {"id": "go", "approval": {"message": "WORKFLOW-E2E-APPROVE: ship it?"}},
                {"id": "ship", "agent": "researcher", "task": "scripted-policy: echo\nSHIP-7"},
            ],
            "stateFile": STATE,
            "resume": resume,
        },
    }


def test_a_workflow_approval_survives_a_killed_pi_and_resumes_with_the_plan_kept(
    world: FacesWorld,
) -> None:
    state = world.project / STATE
    terminal = flow_terminal(world, arguments(resume=False))
    try:
        terminal.type("Run the flow.\r")
        screen = terminal.wait_for("WORKFLOW-E2E-APPROVE: ship it?", timeout=180)
        assert "pi-squad flow: workflow approval" in screen
        assert "ship (researcher)" in screen
        recorded = json.loads(state.read_text())
        assert recorded["phases"]["plan"]["status"] == "completed"
        assert "PLAN-7" in recorded["phases"]["plan"]["output"]
        planned = recorded["phases"]["plan"]
        pid = terminal.child.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
    finally:
        terminal.close()
    terminal = flow_terminal(world, arguments(resume=True))
    try:
        terminal.type("Run the flow.\r")
        terminal.wait_for("WORKFLOW-E2E-APPROVE: ship it?", timeout=180)
        terminal.type("\r")  # the dialog's first choice: Yes
        terminal.wait_for("Flow workflow: 3 phases completed", timeout=180)
    finally:
        terminal.close()
    recorded = json.loads(state.read_text())
    assert recorded["completedAt"] is not None
    assert recorded["receipts"]["go"]["consumedAt"] is not None
    assert "SHIP-7" in recorded["phases"]["ship"]["output"]
    # The plan ran once: the resumed run kept the killed run's record of it, unchanged.
    assert recorded["phases"]["plan"] == planned
