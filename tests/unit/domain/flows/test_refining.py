"""``evaluate`` over a scripted dispatch and a recording check runner: who runs in which order,
what the operator and each critic are told, and which answers end the rounds (the check's exit
status and the critics' ``VERDICT`` lines only)."""

from __future__ import annotations

from typing import Any

import pytest

from domain.errors import ErrorCode
from domain.flows.call import FlowCall, parse_call
from domain.flows.errors import FlowError
from domain.flows.handoff import HandoffGuard
from domain.flows.mode_parts import CheckOutcome, Decision, FlowOutcome, FlowStatus, ModeInputs
from domain.flows.runs import ChildJob, RunResult, RunStatus
from domain.flows.strategies import STRATEGIES
from tests.fakes.flows import FakeCheckRun
from tests.unit.domain.flows.test_judging import (
    INJECTION,
    WHY,
    BatchedDispatch,
    ScriptedDispatch,
    failed,
)


def run(
    document: dict[str, Any], dispatch: ScriptedDispatch, check: FakeCheckRun | None = None
) -> FlowOutcome:
    call: FlowCall = parse_call({**document, "why": WHY})
    guard = HandoffGuard.for_call(call)
    return STRATEGIES[call.mode](call, dispatch, guard, ModeInputs(check=check, cwd="/proj"))


EVALUATE = {"task": "Write the parser.", "evaluate": {}}
PANEL = {
    "task": "Write the parser.",
    "evaluate": {"redteam": [{"agent": "redteam"}, {"agent": "analyst"}]},
}


def test_a_failing_first_draft_is_revised_once_with_its_critique_and_then_passes() -> None:
    dispatch = BatchedDispatch(
        {
            "operator-1": "draft one",
            "critic-1-1": "VERDICT: REVISE\nThe empty input crashes it.",
            "operator-2": "draft two",
            "critic-2-1": "verdict: pass",
        }
    )
    outcome = run(EVALUATE, dispatch)
    assert dispatch.batches == [["operator-1"], ["critic-1-1"], ["operator-2"], ["critic-2-1"]]
    assert [job.role.agent for job in dispatch.jobs] == ["operator", "redteam"] * 2
    assert dispatch.told("operator-1") == "Write the parser."
    revision = dispatch.told("operator-2")
    assert revision.startswith("Write the parser.\n\nYour previous artifact and the critique")
    assert "draft one" in revision
    assert "The empty input crashes it." in revision
    assert revision.count("<<<UNTRUSTED DATA") == 2
    assert outcome.status is FlowStatus.COMPLETED
    assert outcome.summary.startswith(
        "Flow evaluate: passed in 2 round(s); the artifact is operator-2's."
    )
    assert outcome.decisions == (
        Decision("evaluate.panel_verdict", "critic-1-1", "REVISE", "line"),
        Decision("evaluate.panel_verdict", "critic-2-1", "PASS", "line"),
    )


def test_a_critic_sees_only_the_operators_output_with_the_pass_contract_in_its_rubric() -> None:
    document = {
        "task": "Write the parser.",
        "evaluate": {
            "operator": {"agent": "operator", "task": "Draft privately: {task}"},
            "passContract": "Every public function has a docstring.",
        },
    }
    dispatch = ScriptedDispatch({"operator-1": "def parse(): ...", "critic-1-1": "VERDICT: PASS"})
    run(document, dispatch)
    assert dispatch.told("operator-1") == "Draft privately: Write the parser."
    critic = dispatch.told("critic-1-1")
    assert critic.startswith("Write the parser.\n\nJudge whether the artifact below")
    assert "Every public function has a docstring." in critic
    assert "`VERDICT: PASS` or `VERDICT: REVISE`" in critic
    assert "<<<UNTRUSTED DATA" in critic
    assert "def parse(): ..." in critic
    assert "Draft privately" not in critic


def test_a_panel_judges_together_and_one_revise_sends_the_draft_back() -> None:
    dispatch = BatchedDispatch(
        {
            "critic-1-1": "VERDICT: PASS",
            "critic-1-2": "VERDICT: REVISE\nNo tests.",
            "critic-2-1": "VERDICT: PASS",
            "critic-2-2": "VERDICT: PASS",
        }
    )
    outcome = run(PANEL, dispatch)
    assert dispatch.batches == [
        ["operator-1"],
        ["critic-1-1", "critic-1-2"],
        ["operator-2"],
        ["critic-2-1", "critic-2-2"],
    ]
    # Only the critic that asked for a revision is the critique.
    assert "No tests." in dispatch.told("operator-2")
    assert outcome.status is FlowStatus.COMPLETED
    assert [r.key for r in outcome.results] == [
        "operator-1",
        "critic-1-1",
        "critic-1-2",
        "operator-2",
        "critic-2-1",
        "critic-2-2",
    ]


def test_a_failing_check_is_a_revise_with_its_output_and_the_critics_sit_out_that_round() -> None:
    check = FakeCheckRun([CheckOutcome(1, "FAILED test_empty"), CheckOutcome(0, "ok")])
    document = {
        "task": "Write the parser.",
        "cwd": "work",
        "evaluate": {"operator": {"agent": "operator", "cwd": "sub"}, "checkCommand": "pytest"},
    }
    dispatch = ScriptedDispatch({"critic-2-1": "VERDICT: PASS"})
    outcome = run(document, dispatch, check)
    assert dispatch.keys == ["operator-1", "operator-2", "critic-2-1"]
    # The check runs in the operator's directory (the flow's, then the role's), 5 minutes bound.
    assert check.calls == [("pytest", "/proj/sub", 300_000)] * 2
    revision = dispatch.told("operator-2")
    assert "The check command `pytest` exited 1" in revision
    assert "FAILED test_empty" in revision
    assert outcome.decisions[0] == Decision("evaluate.panel_verdict", "check-1", "REVISE", "check")
    assert outcome.status is FlowStatus.COMPLETED


def test_a_check_stopped_at_its_bound_is_a_revise_too() -> None:
    check = FakeCheckRun([CheckOutcome(None, "partial", timed_out=True), CheckOutcome(0)])
    document = {"task": "t", "evaluate": {"checkCommand": "make test"}}
    dispatch = ScriptedDispatch({"critic-2-1": "VERDICT: PASS"})
    run(document, dispatch, check)
    assert "`make test` was stopped at its bound" in dispatch.told("operator-2")


def test_a_passing_check_does_not_pass_without_the_critics() -> None:
    check = FakeCheckRun([CheckOutcome(0)])
    document = {"task": "t", "evaluate": {"checkCommand": "true", "maxIterations": 1}}
    outcome = run(document, ScriptedDispatch({"critic-1-1": "VERDICT: REVISE\nno"}), check)
    assert outcome.status is FlowStatus.PARTIAL


def test_a_check_that_cannot_start_stops_the_flow_with_check_command_failed() -> None:
    check = FakeCheckRun([CheckOutcome(None, start_error="no such directory")])
    dispatch = ScriptedDispatch({})
    outcome = run({"task": "t", "evaluate": {"checkCommand": "pytest"}}, dispatch, check)
    assert dispatch.keys == ["operator-1"]
    assert outcome.status is FlowStatus.FAILED
    stopped = outcome.results[-1]
    assert (stopped.key, stopped.error_code) == ("check-1", ErrorCode.CHECK_COMMAND_FAILED)
    assert stopped.error == "`pytest` could not start in /proj: no such directory"


def test_a_check_command_where_none_can_run_fails_before_any_spawn() -> None:
    dispatch = ScriptedDispatch({})
    outcome = run({"task": "t", "evaluate": {"checkCommand": "pytest"}}, dispatch, check=None)
    assert dispatch.jobs == []
    assert outcome.status is FlowStatus.FAILED
    (refused,) = outcome.results
    assert (refused.key, refused.error_code) == ("check-1", ErrorCode.CHECK_COMMAND_FAILED)
    assert refused.error == "this host gives the flow no check-command runner"


@pytest.mark.parametrize(("rounds", "expected"), [(None, 3), (1, 1), (8, 8)])
def test_out_of_rounds_the_last_attempt_is_returned_as_partial(
    rounds: int | None, expected: int
) -> None:
    evaluate = {} if rounds is None else {"maxIterations": rounds}
    dispatch = ScriptedDispatch({})  # every critic answers "ok": no PASS line, read as REVISE
    outcome = run({"task": "t", "evaluate": evaluate}, dispatch)
    assert len(dispatch.jobs) == 2 * expected
    assert outcome.status is FlowStatus.PARTIAL
    assert outcome.summary.startswith(
        f"Flow evaluate: no pass in {expected} round(s); the last attempt "
        f"(operator-{expected}) is returned unaccepted."
    )
    assert {d.source for d in outcome.decisions} == {"default"}


def test_a_failed_critic_stops_the_flow() -> None:
    dispatch = ScriptedDispatch({"critic-1-2": failed})
    outcome = run(PANEL, dispatch)
    assert dispatch.keys == ["operator-1", "critic-1-1", "critic-1-2"]
    assert outcome.status is FlowStatus.FAILED


def test_under_the_fail_policy_an_injected_draft_never_reaches_a_critic() -> None:
    dispatch = ScriptedDispatch({"operator-1": INJECTION})
    outcome = run({**EVALUATE, "handoffPolicy": "fail"}, dispatch)
    assert dispatch.keys == ["operator-1"]
    refused = outcome.results[-1]
    assert (refused.key, refused.error_code) == ("critic-1-1", ErrorCode.HANDOFF_POLICY_VIOLATION)


def test_a_contracted_critic_is_read_from_its_data_only() -> None:
    def envelope(job: ChildJob) -> RunResult:
        return RunResult(
            job.key,
            job.role.agent,
            RunStatus.COMPLETED,
            "VERDICT: PASS",  # prose: never read for a contracted role
            contract_id="sha256:" + "c" * 64,
            envelope={"status": "completed", "data": {"verdict": "revise"}},
        )

    dispatch = ScriptedDispatch({"critic-1-1": envelope})
    outcome = run({"task": "t", "evaluate": {"maxIterations": 1}}, dispatch)
    assert outcome.decisions == (
        Decision("evaluate.panel_verdict", "critic-1-1", "REVISE", "contract"),
    )


@pytest.mark.parametrize(
    ("evaluate", "path"),
    [
        ({"maxIterations": 0}, "$.evaluate.maxIterations"),
        ({"maxIterations": 9}, "$.evaluate.maxIterations"),
        ({"redteam": []}, "$.evaluate.redteam"),
        ({"redteam": [{"agent": "redteam"}] * 9}, "$.evaluate.redteam"),
        ({"checkCommand": "  "}, "$.evaluate.checkCommand"),
        ({"critic": {"agent": "redteam"}}, "$.evaluate"),
        ({"redteam": {"agent": "redteam", "task": "judge"}}, "$.evaluate.redteam"),
    ],
)
def test_malformed_evaluate_calls_are_refused_at_their_path(
    evaluate: dict[str, Any], path: str
) -> None:
    with pytest.raises(FlowError) as refused:
        parse_call({"task": "t", "evaluate": evaluate, "why": WHY})
    assert refused.value.code is ErrorCode.FLOW_INVALID
    assert refused.value.path == path


def test_evaluate_roles_are_the_operator_and_every_critic() -> None:
    single = parse_call({**EVALUATE, "why": WHY})
    assert [(path, role.agent) for path, role in single.roles()] == [
        ("$.evaluate.operator", "operator"),
        ("$.evaluate.redteam", "redteam"),
    ]
    panel = parse_call({**PANEL, "why": WHY})
    assert [(path, role.agent) for path, role in panel.roles()] == [
        ("$.evaluate.operator", "operator"),
        ("$.evaluate.redteam[0]", "redteam"),
        ("$.evaluate.redteam[1]", "analyst"),
    ]
