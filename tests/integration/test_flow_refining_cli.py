"""``evaluate`` and ``search`` through ``pi-squad flow`` with the bundled pi-flows agents, the
real check-command runner and the scripted fake child runtime: a call copied from pi-flows'
documentation runs unchanged, a non-zero check sends the draft back, and the flow's status and
exit say whether the answer was accepted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fakes.child_runtime import FakeChild
from tests.fakes.flows import answer
from tests.integration.flow_cli_support import FlowCli, run_call

WHY = "independent verification"


@pytest.fixture
def cli(tmp_path: Path) -> FlowCli:
    return FlowCli(tmp_path)


def flow(cli: FlowCli, capsys: pytest.CaptureFixture[str], call: dict[str, Any]) -> Any:
    return run_call(cli, capsys, call, WHY)


def test_an_evaluate_call_revises_the_draft_until_its_check_and_critic_pass(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    def fixing(child: FakeChild) -> None:
        (cli.cwd / "fixed.txt").write_text("yes", encoding="utf-8")
        child.say("draft two: fixed.txt written")
        child.settle()

    cli.scripted.scripts["operator-1"] = answer("draft one")
    cli.scripted.scripts["operator-2"] = fixing
    cli.scripted.scripts["critic-2-1"] = answer("VERDICT: PASS")
    call = {"task": "Write fixed.txt.", "evaluate": {"checkCommand": "test -f fixed.txt"}}
    status, document = flow(cli, capsys, call)
    assert status == 0, document
    assert (document["mode"], document["status"]) == ("evaluate", "completed")
    assert [(r["key"], r["agent"]) for r in document["results"]] == [
        ("operator-1", "operator"),
        ("operator-2", "operator"),
        ("critic-2-1", "redteam"),
    ]
    revision = cli.scripted.runtime.spawned[1].request.first_prompt
    assert "The check command `test -f fixed.txt` exited 1" in revision
    assert "draft one" in revision


def test_an_evaluate_without_a_pass_exits_1_returning_its_last_attempt(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    cli.scripted.scripts["critic-1-1"] = answer("VERDICT: REVISE\nNot yet.")
    call = {"task": "Write it.", "evaluate": {"maxIterations": 1}}
    status, document = flow(cli, capsys, call)
    assert status == 1
    assert document["status"] == "partial"
    assert document["summary"].startswith("Flow evaluate: no pass in 1 round(s)")
    assert document["results"][0]["output"]


def test_a_search_call_scores_refines_and_debriefs_the_winner(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    for index, score in ((1, 30), (2, 75)):
        cli.scripted.scripts[f"candidate-1-{index}"] = answer(f"name {index}")
        cli.scripted.scripts[f"score-1-{index}"] = answer(f"SCORE: {score}")
    cli.scripted.scripts["score-2-1"] = answer("SCORE: 10")
    cli.scripted.scripts["score-2-2"] = answer("SCORE: 10")
    cli.scripted.scripts["debrief"] = answer("Final: name 2")
    call = {"task": "Name the tool.", "search": {"candidates": 2}}
    status, document = flow(cli, capsys, call)
    assert status == 0, document
    keys = [(r["key"], r["agent"]) for r in document["results"]]
    assert keys[0] == ("candidate-1-1", "strategist")
    assert keys[2] == ("score-1-1", "redteam")
    assert keys[-1] == ("debrief", "debrief")
    assert len(keys) == 9
    assert "candidate-1-2 won with 75/100" in document["summary"]
    scorer = cli.scripted.runtime.spawned[2]
    assert scorer.request.tools == ()  # the default scorer runs with tools none


def test_a_search_whose_generators_all_fail_exits_1_with_search_no_candidates(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    def crash(child: FakeChild) -> None:
        child.exit(1)

    cli.scripted.default = crash
    status, document = flow(cli, capsys, {"task": "t", "search": {"candidates": 2}})
    assert status == 1
    assert document["results"][-1]["error"]["code"] == "SEARCH_NO_CANDIDATES"
    assert len(cli.scripted.runtime.spawned) == 2
