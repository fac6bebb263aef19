"""``vote``, ``debate`` and ``graph.debrief`` through ``pi-squad flow`` with the bundled pi-flows
agents and the scripted fake child runtime: calls copied from pi-flows' documentation run
unchanged, and a panel of the wrong size is refused before any child starts."""

from __future__ import annotations

import pytest

from tests.fakes.flows import answer
from tests.integration.flow_cli_support import FlowCli

# The judging modes' CLI tests' fixture (a ``FlowCli`` over a temporary project) and runner.
from tests.integration.test_flow_judging_cli import cli, flow

__all__ = ["cli"]


def test_a_vote_runs_its_voters_then_the_debrief_over_their_ballots(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    cli.scripted.scripts["voter-1"] = answer("BALLOT-ONE: orjson")
    cli.scripted.scripts["voter-2"] = answer("BALLOT-TWO: json")
    cli.scripted.scripts["debrief"] = answer("The voters split; json is enough.")
    vote = {"voters": [{"agent": "recon"}, {"agent": "analyst"}], "debrief": {"agent": "debrief"}}
    status, document = flow(cli, capsys, {"task": "Which parser?", "vote": vote})
    assert status == 0
    assert (document["mode"], document["status"]) == ("vote", "completed")
    assert [(r["key"], r["agent"]) for r in document["results"]] == [
        ("voter-1", "recon"),
        ("voter-2", "analyst"),
        ("debrief", "debrief"),
    ]
    debrief = cli.scripted.runtime.spawned[-1]
    assert "BALLOT-ONE: orjson" in debrief.request.first_prompt
    assert "BALLOT-TWO: json" in debrief.request.first_prompt
    assert document["summary"].startswith("Flow vote: 2/2 voters succeeded; merged by debrief.")


def test_a_vote_of_one_voter_exits_1_with_too_few_voters_and_spawns_nothing(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    status, document = flow(cli, capsys, {"task": "t", "vote": {"agent": "recon", "count": 1}})
    assert status == 1
    assert document["error"]["code"] == "TOO_FEW_VOTERS"
    assert (document["error"]["measured"], document["error"]["path"]) == (1, "$.vote.count")
    assert cli.scripted.runtime.spawned == []


def test_a_debate_argues_two_rounds_and_the_analyst_adjudicates(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    cli.scripted.scripts["round-1-advocate-1"] = answer("CASE-A: keep the monolith")
    cli.scripted.scripts["round-1-advocate-2"] = answer("CASE-B: split the service")
    participants = [{"agent": "analyst"}, {"agent": "strategist"}]
    call = {"task": "Split the service?", "debate": {"participants": participants}}
    status, document = flow(cli, capsys, call)
    assert status == 0
    assert [r["key"] for r in document["results"]] == [
        "round-1-advocate-1",
        "round-1-advocate-2",
        "round-2-advocate-1",
        "round-2-advocate-2",
        "adjudicator",
    ]
    rebuttal = cli.scripted.runtime.spawned[2].request.first_prompt
    assert "CASE-B: split the service" in rebuttal
    assert document["results"][-1]["agent"] == "analyst"


def test_a_debate_of_one_participant_exits_1_before_any_spawn(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    call = {"task": "t", "debate": {"participants": [{"agent": "analyst"}]}}
    status, document = flow(cli, capsys, call)
    assert status == 1
    assert document["error"]["code"] == "DEBATE_TOO_FEW_PARTICIPANTS"
    assert cli.scripted.runtime.spawned == []


def test_a_graph_debrief_synthesises_its_terminal_nodes(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    cli.scripted.scripts["node-a"] = answer("NODE-A-FINDING")
    nodes = [
        {"id": "a", "agent": "recon", "task": "look at a"},
        {"id": "b", "agent": "recon", "task": "look at b"},
    ]
    call = {"task": "Survey.", "graph": {"nodes": nodes, "debrief": {"agent": "debrief"}}}
    status, document = flow(cli, capsys, call)
    assert status == 0
    assert [r["key"] for r in document["results"]] == ["node-a", "node-b", "debrief"]
    assert "NODE-A-FINDING" in cli.scripted.runtime.spawned[-1].request.first_prompt


def test_an_unknown_voter_is_refused_at_its_path_before_any_spawn(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    status, document = flow(cli, capsys, {"task": "t", "vote": {"agent": "nobody", "count": 2}})
    assert status == 1
    assert (document["error"]["code"], document["error"]["path"]) == (
        "UNKNOWN_AGENT",
        "$.vote.agent",
    )
    assert cli.scripted.runtime.spawned == []
