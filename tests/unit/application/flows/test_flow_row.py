"""The live row's stage line: a stage that groups runs (a round, an iteration, a wave) shows
how many of its runs settled, then the next stage replaces it; a chain step says nothing more."""

from __future__ import annotations

from application.flows.flow_tool import FlowRow
from domain.flows.call_roles import FlowTask
from domain.flows.runs import ChildJob, RunResult, RunStatus


def job(key: str, stage: str) -> ChildJob:
    return ChildJob(key, FlowTask("analyst", "t"), "t", stage=stage)


def done(key: str) -> RunResult:
    return RunResult(key, "analyst", RunStatus.COMPLETED, "ok")


def test_a_round_shows_its_settled_runs_then_the_next_round_replaces_it() -> None:
    shown: list[str] = []
    row = FlowRow(shown.append, planned=5)
    for key in ("a-1", "b-1"):
        row.observe(job(key, "round-1"), None)
    row.observe(job("a-1", "round-1"), done("a-1"))
    assert shown[-1].splitlines()[:2] == ["flow: 1/5 settled", "  stage round-1: 1/2 settled"]
    row.observe(job("b-1", "round-1"), done("b-1"))
    assert "  stage round-1: 2/2 settled" in shown[-1].splitlines()
    row.observe(job("a-2", "round-2"), None)
    assert "  stage round-2: 0/1 settled" in shown[-1].splitlines()
    assert not any("round-1" in line for line in shown[-1].splitlines())
    row.show_done()
    assert not any(line.startswith("  stage") for line in shown[-1].splitlines())


def test_a_chain_step_is_its_own_stage_and_adds_no_line() -> None:
    shown: list[str] = []
    row = FlowRow(shown.append, planned=2)
    row.observe(job("step-1", "step-1"), None)
    assert not any(line.startswith("  stage") for line in shown[-1].splitlines())
