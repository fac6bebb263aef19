"""What a vote and a debate leave in the trace (one ``vote.tally`` event counting the ballots,
one ``debate.judge_verdict`` event for the adjudicator's decision, a stage per round), and the
runs the live row counts for them before they start."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from application.flows.flow_tool import planned_runs
from tests.fakes.flows import agent
from tests.unit.application.flows.engine import WHY, TracedEngine


@pytest.fixture
def engine(tmp_path: Path) -> TracedEngine:
    traced = TracedEngine(tmp_path)
    names = ("recon", "analyst", "strategist", "debrief")
    traced.agents.bundled = (*traced.agents.bundled, *(agent(n, tools=("read",)) for n in names))
    return traced


def test_a_vote_records_its_tally_as_a_state_event(engine: TracedEngine) -> None:
    vote = {"agent": "recon", "count": 2, "debrief": {"agent": "debrief"}}
    engine.run({"task": "g", "vote": vote, "why": WHY, "traceFile": "t.jsonl"})
    (tally,) = [e for e in engine.tracer.by_role("event") if e.name == "vote.tally"]
    assert tally.attributes["flow.unit_key"] == "voters"
    assert tally.attributes["flow.control.value"] == "2/2 ballots"
    assert tally.attributes["flow.event_kind"] == "state"


def test_a_debate_records_the_adjudicators_decision_and_a_stage_per_round(
    engine: TracedEngine,
) -> None:
    participants = [{"agent": "analyst"}, {"agent": "strategist"}]
    debate = {"participants": participants, "adjudicator": {"agent": "debrief"}}
    engine.run({"task": "g", "debate": debate, "why": WHY, "traceFile": "t.jsonl"})
    (verdict,) = [e for e in engine.tracer.by_role("event") if e.name == "debate.judge_verdict"]
    assert verdict.attributes["flow.unit_key"] == "adjudicator"
    assert verdict.attributes["flow.control.value"] == "decided by debrief"
    assert verdict.attributes["flow.control.source"] == "2 advocates, 2 round(s)"
    stages = [span.name for span in engine.tracer.by_role("stage")]
    assert stages == ["stage.round-1", "stage.round-2", "stage.adjudicator"]


TWO = [{"agent": "analyst"}, {"agent": "strategist"}]
NODES = [{"id": "a", "agent": "recon", "task": "x"}, {"id": "b", "agent": "recon", "task": "y"}]


@pytest.mark.parametrize(
    ("params", "runs"),
    [
        ({"vote": {"agent": "recon"}}, 3),
        ({"vote": {"agent": "recon", "count": 5, "debrief": {"agent": "debrief"}}}, 6),
        ({"vote": {"voters": TWO}}, 2),
        ({"debate": {"participants": TWO}}, 5),
        ({"debate": {"participants": TWO, "rounds": 3}}, 7),
        ({"graph": {"nodes": NODES, "debrief": {"agent": "debrief"}}}, 3),
        ({"graph": {"nodes": NODES}}, 2),
    ],
)
def test_the_live_row_counts_every_run_a_panel_plans(params: dict[str, Any], runs: int) -> None:
    assert planned_runs({"task": "t", **params}) == runs
