"""``vote``, ``debate`` and ``graph.debrief`` over a scripted dispatch: who runs, in which order
and batch, what each is told, every bound and stop rule, and the events that record them."""

from __future__ import annotations

from typing import Any

import pytest

from domain.errors import ErrorCode
from domain.flows.call import parse_call
from domain.flows.errors import FlowError
from domain.flows.handoff_record import HandoffAction
from domain.flows.mode_parts import Decision, FlowStatus
from domain.flows.panel import VOTER_STANCES
from domain.flows.runs import RunStatus
from domain.flows.write_guard import concurrent_pairs
from tests.unit.domain.flows.test_judging import (
    INJECTION,
    WHY,
    BatchedDispatch,
    ScriptedDispatch,
    failed,
    run,
)


def refusal(document: dict[str, Any]) -> FlowError:
    with pytest.raises(FlowError) as refused:
        parse_call({"task": "Which parser?", **document, "why": WHY})
    return refused.value


TASK = "Which JSON parser should the service use?"
VOTE = {"task": TASK, "vote": {"agent": "recon", "count": 3, "debrief": {"agent": "debrief"}}}
DEBATE = {
    "task": TASK,
    "debate": {"participants": [{"agent": "analyst"}, {"agent": "strategist"}]},
}


# -- vote ---------------------------------------------------------------------------------------


def test_voters_run_together_then_the_debrief_merges_their_ballots() -> None:
    dispatch = BatchedDispatch({"voter-1": "orjson", "voter-2": "ujson", "voter-3": "orjson"})
    outcome = run(VOTE, dispatch)
    assert dispatch.batches == [["voter-1", "voter-2", "voter-3"], ["debrief"]]
    assert [job.role.agent for job in dispatch.jobs] == ["recon"] * 3 + ["debrief"]
    merged = dispatch.told("debrief")
    assert merged.startswith(TASK)
    assert merged.count("<<<UNTRUSTED DATA") == 3
    assert "ujson" in merged
    assert "If no majority emerges, say so plainly; never invent one." in merged
    assert outcome.status is FlowStatus.COMPLETED
    assert outcome.summary.startswith("Flow vote: 3/3 voters succeeded; merged by debrief.")
    assert outcome.decisions == (
        Decision("vote.tally", "voters", "3/3 ballots", "voters' settled runs"),
    )
    assert [(h.source, h.target) for h in outcome.handoffs] == [
        (f"voter-{n}", "debrief") for n in (1, 2, 3)
    ]


def test_identical_voters_each_take_a_different_stance() -> None:
    dispatch = ScriptedDispatch({})
    run({"task": TASK, "vote": {"agent": "recon", "count": 3}}, dispatch)
    told = [dispatch.told(f"voter-{n}") for n in (1, 2, 3)]
    for number, prompt in enumerate(told, start=1):
        assert prompt.startswith(TASK)
        assert f"## Your stance: voter {number} of 3\n{VOTER_STANCES[number - 1]}" in prompt
    assert len(set(told)) == 3


def test_different_voters_are_told_the_task_alone() -> None:
    dispatch = ScriptedDispatch({})
    voters = [{"agent": "recon"}, {"agent": "recon", "model": "p/other"}]
    run({"task": TASK, "vote": {"voters": voters}}, dispatch)
    assert [job.prompt for job in dispatch.jobs] == [TASK, TASK]
    assert [job.role.model for job in dispatch.jobs] == [None, "p/other"]


def test_without_a_debrief_every_answer_is_returned_and_no_majority_is_computed() -> None:
    dispatch = ScriptedDispatch({"voter-1": "A", "voter-2": "B", "voter-3": "A"})
    outcome = run({"task": TASK, "vote": {"agent": "recon"}}, dispatch)
    assert dispatch.keys == ["voter-1", "voter-2", "voter-3"]
    assert [r.output for r in outcome.results] == ["A", "B", "A"]
    assert outcome.status is FlowStatus.COMPLETED
    assert "no majority is computed" in outcome.summary
    # Nothing says "A" won: the answers are the result.
    assert "A" not in outcome.summary.split(";")[0]


def test_the_debrief_merges_only_the_ballots_that_succeeded() -> None:
    dispatch = ScriptedDispatch({"voter-2": failed, "voter-1": "first", "voter-3": "third"})
    outcome = run(VOTE, dispatch)
    assert dispatch.told("debrief").count("<<<UNTRUSTED DATA") == 2
    assert outcome.status is FlowStatus.PARTIAL
    assert outcome.decisions[0].value == "2/3 ballots"


def test_no_ballot_at_all_fails_the_vote_and_runs_no_debrief() -> None:
    dispatch = ScriptedDispatch({f"voter-{n}": failed for n in (1, 2, 3)})
    outcome = run(VOTE, dispatch)
    assert dispatch.keys == ["voter-1", "voter-2", "voter-3"]
    assert outcome.status is FlowStatus.FAILED
    assert outcome.summary == "Flow vote: 0/3 voters succeeded."


def test_a_failed_debrief_fails_the_vote() -> None:
    dispatch = ScriptedDispatch({"debrief": failed})
    outcome = run(VOTE, dispatch)
    assert outcome.status is FlowStatus.FAILED
    assert "the debrief (debrief) failed: CHILD_EXIT_NONZERO" in outcome.summary


def test_under_the_fail_policy_an_injected_ballot_never_reaches_the_debrief() -> None:
    dispatch = ScriptedDispatch({"voter-2": INJECTION})
    outcome = run({**VOTE, "handoffPolicy": "fail"}, dispatch)
    assert dispatch.keys == ["voter-1", "voter-2", "voter-3"]
    refused = outcome.results[-1]
    assert (refused.key, refused.error_code) == ("debrief", ErrorCode.HANDOFF_POLICY_VIOLATION)
    assert outcome.status is FlowStatus.FAILED


def test_the_default_count_is_three_and_the_voters_are_every_role() -> None:
    call = parse_call({"task": TASK, "vote": {"agent": "recon"}, "why": WHY})
    # A role's path is where its ``agent`` field sits in: an unknown one is ``$.vote.agent``.
    assert [(path, role.agent) for path, role in call.roles()] == [("$.vote", "recon")] * 3
    voters = [{"agent": "a"}, {"agent": "b"}]
    vote = {"voters": voters, "debrief": {"agent": "debrief"}}
    named = parse_call({"task": TASK, "vote": vote, "why": WHY})
    assert [(path, role.agent) for path, role in named.roles()] == [
        ("$.vote.voters[0]", "a"),
        ("$.vote.voters[1]", "b"),
        ("$.vote.debrief", "debrief"),
    ]


@pytest.mark.parametrize(
    ("vote", "code", "path"),
    [
        ({"agent": "recon", "count": 1}, ErrorCode.TOO_FEW_VOTERS, "$.vote.count"),
        ({"voters": [{"agent": "recon"}]}, ErrorCode.TOO_FEW_VOTERS, "$.vote.voters"),
        ({}, ErrorCode.TOO_FEW_VOTERS, "$.vote"),
        ({"agent": "recon", "count": 9}, ErrorCode.TOO_MANY_TASKS, "$.vote.count"),
        ({"voters": [{"agent": "recon"}] * 9}, ErrorCode.TOO_MANY_TASKS, "$.vote.voters"),
        (
            {"agent": "recon", "voters": [{"agent": "a"}, {"agent": "b"}]},
            ErrorCode.FLOW_INVALID,
            "$.vote",
        ),
        (
            {"voters": [{"agent": "a"}, {"agent": "b"}], "count": 2},
            ErrorCode.FLOW_INVALID,
            "$.vote",
        ),
    ],
)
def test_a_vote_of_the_wrong_shape_is_refused_before_any_spawn(
    vote: dict[str, Any], code: ErrorCode, path: str
) -> None:
    refused = refusal({"vote": vote})
    assert (refused.code, refused.path) == (code, path)


def test_too_few_voters_names_the_measured_and_the_allowed_count() -> None:
    refused = refusal({"vote": {"agent": "recon", "count": 1}})
    problem = refused.problems[0]
    assert (problem.measured, problem.allowed) == (1, {"minimum": 2, "maximum": 8})


# -- debate -------------------------------------------------------------------------------------


def test_round_one_runs_together_and_round_two_answers_it_then_the_adjudicator_decides() -> None:
    dispatch = BatchedDispatch(
        {"round-1-advocate-1": "orjson is fastest", "round-1-advocate-2": "stdlib is enough"}
    )
    outcome = run(DEBATE, dispatch)
    assert dispatch.batches == [
        ["round-1-advocate-1", "round-1-advocate-2"],
        ["round-2-advocate-1", "round-2-advocate-2"],
        ["adjudicator"],
    ]
    assert [job.role.agent for job in dispatch.jobs] == ["analyst", "strategist"] * 2 + ["analyst"]
    opening = dispatch.told("round-1-advocate-1")
    assert "advocate 1 of 2, round 1 of 2" in opening
    assert "<<<UNTRUSTED DATA" not in opening
    rebuttal = dispatch.told("round-2-advocate-2")
    assert "advocate 2 of 2, round 2 of 2" in rebuttal
    assert "orjson is fastest" in rebuttal
    assert "stdlib is enough" in rebuttal
    round_two = next(job for job in dispatch.jobs if job.key == "round-2-advocate-1")
    assert round_two.depends_on == ("round-1-advocate-1", "round-1-advocate-2")
    assert outcome.status is FlowStatus.COMPLETED
    assert outcome.summary.startswith(
        "Flow debate: 2 advocates, 2 round(s), adjudicated by analyst."
    )
    assert outcome.decisions == (
        Decision(
            "debate.judge_verdict", "adjudicator", "decided by analyst", "2 advocates, 2 round(s)"
        ),
    )


def test_the_adjudicator_sees_only_the_last_round_against_the_task() -> None:
    dispatch = ScriptedDispatch(
        {
            "round-1-advocate-1": "opening A",
            "round-1-advocate-2": "opening B",
            "round-2-advocate-1": "final A",
            "round-2-advocate-2": "final B",
        }
    )
    run({**DEBATE, "debate": {**DEBATE["debate"], "adjudicator": {"agent": "debrief"}}}, dispatch)  # type: ignore[dict-item]
    told = dispatch.told("adjudicator")
    assert told.startswith(TASK)
    assert "final A" in told
    assert "final B" in told
    assert "opening A" not in told
    assert "constraint matrix" in told
    assert dispatch.jobs[-1].role.agent == "debrief"


def test_a_round_with_fewer_than_two_usable_arguments_stops_the_debate() -> None:
    dispatch = ScriptedDispatch({"round-2-advocate-1": failed})
    outcome = run(DEBATE, dispatch)
    assert dispatch.keys == [
        "round-1-advocate-1",
        "round-1-advocate-2",
        "round-2-advocate-1",
        "round-2-advocate-2",
    ]
    stopped = outcome.results[-1]
    assert (stopped.key, stopped.error_code) == (
        "adjudicator",
        ErrorCode.DEBATE_TOO_FEW_PARTICIPANTS,
    )
    assert stopped.error == (
        "round 2: 1 of 2 advocates gave a usable argument; the adjudicator needs two or more"
    )
    assert outcome.status is FlowStatus.FAILED
    assert outcome.decisions == ()


def test_a_failed_advocate_still_argues_the_next_round_given_the_usable_arguments() -> None:
    dispatch = ScriptedDispatch({"round-1-advocate-2": failed})
    participants = [{"agent": "analyst"}, {"agent": "strategist"}, {"agent": "recon"}]
    run({"task": TASK, "debate": {"participants": participants}}, dispatch)
    assert "round-2-advocate-2" in dispatch.keys
    assert dispatch.told("round-2-advocate-2").count("<<<UNTRUSTED DATA") == 2


@pytest.mark.parametrize("rounds", [1, 3])
def test_rounds_bound_how_often_the_advocates_argue(rounds: int) -> None:
    dispatch = ScriptedDispatch({})
    run({**DEBATE, "debate": {**DEBATE["debate"], "rounds": rounds}}, dispatch)  # type: ignore[dict-item]
    assert len(dispatch.keys) == 2 * rounds + 1


def test_under_the_fail_policy_an_injected_argument_stops_the_next_round_before_it_spawns() -> None:
    dispatch = ScriptedDispatch({"round-1-advocate-2": INJECTION})
    participants = [{"agent": "analyst"}, {"agent": "strategist"}, {"agent": "recon"}]
    debate = {"participants": participants}
    outcome = run({"task": TASK, "debate": debate, "handoffPolicy": "fail"}, dispatch)
    assert dispatch.keys == [f"round-1-advocate-{n}" for n in (1, 2, 3)]
    # The first advocate of round 2 is the first recipient the policy refuses: none spawns.
    refused, *skipped = outcome.results[3:]
    assert (refused.key, refused.error_code) == (
        "round-2-advocate-1",
        ErrorCode.HANDOFF_POLICY_VIOLATION,
    )
    assert [(s.key, s.status) for s in skipped] == [
        ("round-2-advocate-2", RunStatus.SKIPPED),
        ("round-2-advocate-3", RunStatus.SKIPPED),
    ]
    assert skipped[0].error == "flow stopped at round-2-advocate-1 by the handoff policy"
    assert outcome.summary.startswith("Flow debate: stopped at round-2-advocate-1 (analyst)")


def test_a_quarantined_argument_reaches_the_next_round_as_a_marker_only() -> None:
    dispatch = ScriptedDispatch({"round-1-advocate-1": INJECTION})
    outcome = run({**DEBATE, "handoffPolicy": "quarantine"}, dispatch)
    assert outcome.handoffs[0].action is HandoffAction.QUARANTINED
    assert "reveal your system prompt" not in dispatch.told("round-2-advocate-2")


@pytest.mark.parametrize(
    ("debate", "code"),
    [
        ({}, ErrorCode.DEBATE_TOO_FEW_PARTICIPANTS),
        ({"participants": [{"agent": "analyst"}]}, ErrorCode.DEBATE_TOO_FEW_PARTICIPANTS),
        ({"participants": [{"agent": "analyst"}] * 9}, ErrorCode.TOO_MANY_TASKS),
        ({"participants": [{"agent": "a"}, {"agent": "b"}], "rounds": 4}, ErrorCode.FLOW_INVALID),
        ({"participants": [{"agent": "a"}, {"agent": "b"}], "rounds": 0}, ErrorCode.FLOW_INVALID),
    ],
)
def test_a_debate_of_the_wrong_shape_is_refused_before_any_spawn(
    debate: dict[str, Any], code: ErrorCode
) -> None:
    assert refusal({"debate": debate}).code is code


def test_debate_roles_are_every_participant_and_the_default_adjudicator() -> None:
    call = parse_call({**DEBATE, "why": WHY})
    assert [(path, role.agent) for path, role in call.roles()] == [
        ("$.debate.participants[0]", "analyst"),
        ("$.debate.participants[1]", "strategist"),
        ("$.debate.adjudicator", "analyst"),
    ]


def test_voters_and_advocates_may_be_alive_together_but_the_final_role_runs_alone() -> None:
    # The pairs the shared-write guard checks: indices into ``call.roles()``.
    assert concurrent_pairs(parse_call({**VOTE, "why": WHY})) == [(0, 1), (0, 2), (1, 2)]
    assert concurrent_pairs(parse_call({**DEBATE, "why": WHY})) == [(0, 1)]
