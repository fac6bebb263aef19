"""What an evaluate and a search leave in the trace (an ``evaluate.panel_verdict`` event for the
check and each critic, a ``search.scores`` event per scored candidate), where an evaluate's
check runs, and the runs the live row counts for them before they start."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from application.flows.flow_tool import planned_runs
from application.flows.trace_setup import TraceDefaults
from domain.flows.contracts import Contract
from domain.flows.mode_parts import CheckOutcome
from tests.fakes.flows import FakeCheckRun, agent, answer
from tests.fakes.tracing import FakeTraceSinks
from tests.unit.application.flows.engine import WHY, Engine
from tests.unit.application.flows.envelopes import envelope, fenced
from tests.unit.domain.flows.test_contracts import contract


@pytest.fixture
def check() -> FakeCheckRun:
    return FakeCheckRun([CheckOutcome(2, "1 failed"), CheckOutcome(0)])


@pytest.fixture
def sinks() -> FakeTraceSinks:
    return FakeTraceSinks()


@pytest.fixture
def engine(tmp_path: Path, check: FakeCheckRun, sinks: FakeTraceSinks) -> Engine:
    traced = Engine(tmp_path, trace_sinks=sinks, trace_defaults=TraceDefaults(), checks=check)
    names = ("operator", "redteam", "strategist", "debrief")
    traced.agents.bundled = (*traced.agents.bundled, *(agent(n, tools=("read",)) for n in names))
    return traced


def events(sinks: FakeTraceSinks, name: str) -> list[Any]:
    return [e for e in sinks.last.by_role("event") if e.name == name]


def test_an_evaluate_traces_its_check_and_each_critic_and_checks_in_the_operators_directory(
    engine: Engine, check: FakeCheckRun, sinks: FakeTraceSinks
) -> None:
    engine.scripted.scripts["critic-2-1"] = answer("VERDICT: PASS")
    (engine.cwd / "pkg").mkdir()
    evaluate = {"checkCommand": "pytest -q", "operator": {"agent": "operator", "cwd": "pkg"}}
    report = engine.run({"task": "g", "evaluate": evaluate, "why": WHY, "traceFile": "t.jsonl"})
    assert report.status == "completed"
    verdicts = events(sinks, "evaluate.panel_verdict")
    assert [e.attributes["flow.unit_key"] for e in verdicts] == ["check-1", "critic-2-1"]
    assert [e.attributes["flow.control.value"] for e in verdicts] == ["REVISE", "PASS"]
    assert [e.attributes["flow.control.source"] for e in verdicts] == ["check", "line"]
    assert check.calls == [("pytest -q", str(engine.cwd / "pkg"), 300_000)] * 2


def test_a_search_traces_each_score(engine: Engine, sinks: FakeTraceSinks) -> None:
    search = {"candidates": 2, "maxRounds": 1}
    engine.run({"task": "g", "search": search, "why": WHY, "traceFile": "t.jsonl"})
    scores = events(sinks, "search.scores")
    assert [e.attributes["flow.unit_key"] for e in scores] == ["score-1-1", "score-1-2"]
    # The fake children echo their prompt: no SCORE line, read as 0.
    assert [e.attributes["flow.control.value"] for e in scores] == ["0", "0"]


PANEL = [{"agent": "redteam"}, {"agent": "analyst"}]


@pytest.mark.parametrize(
    ("params", "runs"),
    [
        ({"evaluate": {}}, 6),
        ({"evaluate": {"redteam": PANEL, "maxIterations": 2}}, 6),
        ({"evaluate": {"maxIterations": 1}}, 2),
        ({"search": {}}, 13),
        ({"search": {"candidates": 2, "maxRounds": 1}}, 5),
    ],
)
def test_the_live_row_counts_every_run_an_evaluate_or_a_search_may_start(
    params: dict[str, Any], runs: int
) -> None:
    assert planned_runs({"task": "t", **params}) == runs


def test_an_operators_contract_budget_is_one_across_its_revisions(engine: Engine) -> None:
    """9 generated tokens per draft under a contract of 15: the first draft fits, the revision
    crosses the ceiling the two share (a budget per draft would let it complete)."""
    small = contract(budget={"timeoutMs": 30000, "maxGeneratedTokens": 15})
    returned = fenced(envelope(contractId=Contract.of(small).contract_id))
    engine.scripted.scripts["operator-1"] = answer(returned, tokens=9)
    engine.scripted.scripts["critic-1-1"] = answer("VERDICT: REVISE\nCite the line.")
    engine.scripted.scripts["operator-2"] = answer(returned, tokens=9)
    operator = {"agent": "operator", "contract": small}
    document = engine.run({"task": "g", "evaluate": {"operator": operator}, "why": WHY}).document()
    first, critic, second = document["results"]
    assert (first["status"], critic["status"]) == ("completed", "completed")
    assert "contractId" not in critic  # a critic never takes the operator's contract
    assert second["error"]["code"] == "BUDGET_EXCEEDED"
    assert document["status"] == "failed"
