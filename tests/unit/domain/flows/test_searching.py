"""``search`` over a scripted dispatch: generation, scoring and refinement rounds in order, what
each generator, scorer and the debrief is told, the beam kept by ``SCORE`` lines only, and the
bounds."""

from __future__ import annotations

from typing import Any

import pytest

from domain.errors import ErrorCode
from domain.flows.call import parse_call
from domain.flows.errors import FlowError
from domain.flows.mode_parts import FlowStatus
from domain.flows.tools import ToolChoice
from tests.unit.domain.flows.test_judging import (
    INJECTION,
    WHY,
    BatchedDispatch,
    ScriptedDispatch,
    failed,
)
from tests.unit.domain.flows.test_refining import run

SEARCH = {"task": "Name the product.", "search": {}}


def test_the_default_search_generates_three_scores_them_refines_the_best_and_debriefs() -> None:
    dispatch = BatchedDispatch(
        {
            "candidate-1-1": "Alpha",
            "candidate-1-2": "Bravo",
            "candidate-1-3": "Charlie",
            "score-1-1": "SCORE: 40\nbland",
            "score-1-2": "SCORE: 85\nmemorable but long",
            "score-1-3": "SCORE: 60",
            "candidate-2-1": "Bravo Two",
            "score-2-1": "SCORE: 90",
            "score-2-2": "SCORE: 20",
            "score-2-3": "SCORE: 70",
        }
    )
    outcome = run(SEARCH, dispatch)
    assert dispatch.batches == [
        ["candidate-1-1", "candidate-1-2", "candidate-1-3"],
        ["score-1-1", "score-1-2", "score-1-3"],
        ["candidate-2-1", "candidate-2-2", "candidate-2-3"],
        ["score-2-1", "score-2-2", "score-2-3"],
        ["debrief"],
    ]
    agents = {job.key.split("-")[0]: job.role.agent for job in dispatch.jobs}
    assert agents == {"candidate": "strategist", "score": "redteam", "debrief": "debrief"}
    assert "Propose candidate 2 of 3" in dispatch.told("candidate-1-2")
    # The scorer reads the prepared candidate, fenced, and must answer with a score line.
    scorer = dispatch.told("score-1-2")
    assert "`SCORE: <n>`" in scorer
    assert "<<<UNTRUSTED DATA" in scorer
    assert "Bravo" in scorer
    # With a beam of one, every refinement starts from the best (Bravo, 85) and its reasons.
    for index in (1, 2, 3):
        refinement = dispatch.told(f"candidate-2-{index}")
        assert "scored 85/100" in refinement
        assert "Bravo" in refinement
        assert "memorable but long" in refinement
    debrief = dispatch.told("debrief")
    assert "scored 90/100" in debrief
    assert "Bravo Two" in debrief
    assert outcome.status is FlowStatus.COMPLETED
    assert outcome.summary.startswith(
        "Flow search: 2 round(s); candidate-2-1 won with 90/100, debriefed."
    )
    assert [(d.name, d.unit, d.value) for d in outcome.decisions][:3] == [
        ("search.scores", "score-1-1", "40"),
        ("search.scores", "score-1-2", "85"),
        ("search.scores", "score-1-3", "60"),
    ]


def test_the_scorer_runs_without_tools_unless_the_call_names_one() -> None:
    dispatch = ScriptedDispatch({})
    run({**SEARCH, "search": {"maxRounds": 1}}, dispatch)
    scorers = [job for job in dispatch.jobs if job.key.startswith("score-")]
    assert [job.role.tools for job in scorers] == [ToolChoice(())] * 3
    named = ScriptedDispatch({})
    run({**SEARCH, "search": {"maxRounds": 1, "scorer": {"agent": "analyst"}}}, named)
    assert named.jobs[3].role.tools is None


@pytest.mark.parametrize("answer", ["Great, 95.", "SCORE: 101", "SCORE: high", "**SCORE: 90**"])
def test_an_unreadable_score_is_zero(answer: str) -> None:
    dispatch = ScriptedDispatch({"score-1-1": answer, "score-1-2": "SCORE: 1"})
    outcome = run({**SEARCH, "search": {"candidates": 2, "maxRounds": 1}}, dispatch)
    first = outcome.decisions[0]
    assert (first.value, first.source) == ("0", "default")
    assert "candidate-1-2 won with 1/100" in outcome.summary


def test_a_wider_beam_refines_each_kept_candidate_in_turn() -> None:
    dispatch = ScriptedDispatch(
        {
            "candidate-1-1": "low",
            "candidate-1-2": "best",
            "candidate-1-3": "second",
            "score-1-1": "SCORE: 10",
            "score-1-2": "SCORE: 90",
            "score-1-3": "SCORE: 50",
        }
    )
    run({**SEARCH, "search": {"beamWidth": 2, "candidates": 3}}, dispatch)
    assert "scored 90/100" in dispatch.told("candidate-2-1")
    assert "scored 50/100" in dispatch.told("candidate-2-2")
    assert "scored 90/100" in dispatch.told("candidate-2-3")


def test_a_worse_refinement_never_replaces_a_better_candidate() -> None:
    dispatch = ScriptedDispatch(
        {
            "candidate-1-1": "original",
            "score-1-1": "SCORE: 80",
            "candidate-2-1": "worse",
            "score-2-1": "SCORE: 30",
        }
    )
    outcome = run({**SEARCH, "search": {"candidates": 1}}, dispatch)
    assert "original" in dispatch.told("debrief")
    assert "candidate-1-1 won with 80/100" in outcome.summary


def test_a_failed_candidate_is_not_scored() -> None:
    dispatch = ScriptedDispatch({"candidate-1-2": failed})
    outcome = run({**SEARCH, "search": {"maxRounds": 1}}, dispatch)
    assert "score-1-2" not in dispatch.keys
    assert dispatch.keys == [
        "candidate-1-1",
        "candidate-1-2",
        "candidate-1-3",
        "score-1-1",
        "score-1-3",
        "debrief",
    ]
    assert outcome.status is FlowStatus.COMPLETED


def test_no_candidate_in_the_first_round_is_search_no_candidates_and_nothing_is_scored() -> None:
    dispatch = ScriptedDispatch({f"candidate-1-{i}": failed for i in (1, 2, 3)})
    outcome = run(SEARCH, dispatch)
    assert dispatch.keys == ["candidate-1-1", "candidate-1-2", "candidate-1-3"]
    assert outcome.status is FlowStatus.FAILED
    last = outcome.results[-1]
    assert (last.key, last.error_code) == ("search", ErrorCode.SEARCH_NO_CANDIDATES)
    assert last.error == "none of the 3 generator run(s) of round 1 succeeded"


def test_a_failed_refinement_round_keeps_the_beam() -> None:
    dispatch = ScriptedDispatch({"candidate-2-1": failed, "score-1-1": "SCORE: 70"})
    outcome = run({**SEARCH, "search": {"candidates": 1}}, dispatch)
    assert dispatch.keys == ["candidate-1-1", "score-1-1", "candidate-2-1", "debrief"]
    assert "candidate-1-1 won with 70/100" in outcome.summary


def test_a_failed_scorer_or_debrief_stops_the_search() -> None:
    scored = ScriptedDispatch({"score-1-1": failed})
    outcome = run({**SEARCH, "search": {"candidates": 1}}, scored)
    assert scored.keys == ["candidate-1-1", "score-1-1"]
    assert outcome.status is FlowStatus.FAILED
    debriefed = ScriptedDispatch({"debrief": failed})
    assert run({**SEARCH, "search": {"candidates": 1}}, debriefed).status is FlowStatus.FAILED


def test_under_the_fail_policy_an_injected_candidate_never_reaches_its_scorer() -> None:
    dispatch = ScriptedDispatch({"candidate-1-1": INJECTION})
    outcome = run({**SEARCH, "handoffPolicy": "fail", "search": {"candidates": 1}}, dispatch)
    assert dispatch.keys == ["candidate-1-1"]
    refused = outcome.results[-1]
    assert (refused.key, refused.error_code) == ("score-1-1", ErrorCode.HANDOFF_POLICY_VIOLATION)


@pytest.mark.parametrize(
    ("search", "path"),
    [
        ({"candidates": 0}, "$.search.candidates"),
        ({"candidates": 9}, "$.search.candidates"),
        ({"beamWidth": 9}, "$.search.beamWidth"),
        ({"maxRounds": 5}, "$.search.maxRounds"),
        ({"maxRounds": 0}, "$.search.maxRounds"),
        ({"scorer": {"agent": "redteam", "task": "x"}}, "$.search.scorer"),
    ],
)
def test_malformed_search_calls_are_refused_at_their_path(
    search: dict[str, Any], path: str
) -> None:
    with pytest.raises(FlowError) as refused:
        parse_call({"task": "t", "search": search, "why": WHY})
    assert refused.value.code is ErrorCode.FLOW_INVALID
    assert refused.value.path == path


def test_search_roles_are_its_generator_scorer_and_debrief() -> None:
    call = parse_call({**SEARCH, "why": WHY})
    assert [(path, role.agent) for path, role in call.roles()] == [
        ("$.search.generator", "strategist"),
        ("$.search.scorer", "redteam"),
        ("$.search.debrief", "debrief"),
    ]
