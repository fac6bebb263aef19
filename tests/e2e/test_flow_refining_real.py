"""``evaluate`` over real Pi 0.80.10 children on the scripted model: the bundled ``operator``
echoes its prompt (``echo``), a project critic from ``.pi/flow-agents/`` answers by the ``reply``
policy (REVISE with a critique, then PASS), and the check command runs in the project. The
first draft is revised once, with the critique, and the second passes."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.pi_runtime import PiRuntime
from adapters.scripted_model.policies import ECHO_PREFIX
from tests.e2e.flow_runs import WHY, run_flow

pytestmark = pytest.mark.realpi

CRITIC = """---
name: critic
description: Scripted critic for the evaluate end-to-end test.
tools: read
---
You judge drafts.
scripted-policy: reply
scripted-replies: VERDICT: REVISE\\nName EVAL-REAL-9 in the title. || VERDICT: PASS
"""


def test_an_evaluate_on_real_pi_revises_a_failing_first_draft_once_and_passes(
    tmp_path: Path, runtime: PiRuntime
) -> None:
    project = tmp_path / "project"
    agents = project / ".pi" / "flow-agents"
    agents.mkdir(parents=True)
    (agents / "critic.md").write_text(CRITIC, encoding="utf-8")
    (project / "notes.txt").write_text("present", encoding="utf-8")
    evaluate = {"redteam": {"agent": "critic"}, "checkCommand": "test -f notes.txt"}
    call = {
        "task": "Draft the EVAL-REAL-9 release note.",
        "evaluate": evaluate,
        "why": WHY,
        "agentScope": "all",
        "confirmProjectAgents": False,
    }
    status, document = run_flow(tmp_path, call)
    assert status == 0, document
    assert document["status"] == "completed"
    results = document["results"]
    assert [(r["key"], r["agent"]) for r in results] == [
        ("operator-1", "operator"),
        ("critic-1-1", "critic"),
        ("operator-2", "operator"),
        ("critic-2-1", "critic"),
    ]
    assert results[1]["output"].startswith("VERDICT: REVISE")
    # The second draft was told to revise its first, with the critique, both fenced as data.
    revision = results[2]["output"]
    assert revision.startswith(ECHO_PREFIX + "Draft the EVAL-REAL-9 release note.")
    assert "Revise the artifact in place" in revision
    assert "Name EVAL-REAL-9 in the title." in revision
    assert revision.count("<<<UNTRUSTED DATA") == 2
    assert results[3]["output"].startswith("VERDICT: PASS")
    assert document["summary"].startswith("Flow evaluate: passed in 2 round(s)")
