"""``orchestrate`` over a scripted dispatch: the decomposition's review, the verifier under each
``verifyPolicy``, the handoff guard on the decomposition and on dependencies, and the call's
fields."""

from __future__ import annotations

from typing import Any

import pytest

from domain.errors import ErrorCode
from domain.flows.call import parse_call
from domain.flows.errors import FlowError
from domain.flows.mode_parts import Decision, FlowOutcome, FlowStatus
from tests.unit.domain.flows.orchestrate_support import (
    orchestrate,
    plan,
    refusal,
)
from tests.unit.domain.flows.test_judging import (
    INJECTION,
    WHY,
    ScriptedDispatch,
    run,
)

# -- review ---------------------------------------------------------------------------------------


def test_a_reviewer_revise_reruns_the_commander_with_the_critique() -> None:
    dispatch = ScriptedDispatch(
        {
            "decompose": plan(),
            "review-1": "VERDICT: REVISE\nMerge api into schema.",
            "decompose-2": plan(["whole service"]),
            "review-2": "VERDICT: PASS",
        }
    )
    outcome = run(orchestrate(review={"agent": "recon"}, reviewCriteria="No overlap."), dispatch)
    assert dispatch.keys == [
        "decompose",
        "review-1",
        "decompose-2",
        "review-2",
        "worker-1",
        "synthesis-1",
    ]
    review = dispatch.told("review-1")
    assert "It passes only if it also meets these criteria: No overlap." in review
    assert '"id": "schema"' in review
    assert "Merge api into schema." in dispatch.told("decompose-2")
    assert [d.value for d in outcome.decisions] == ["REVISE", "PASS"]
    assert outcome.status is FlowStatus.COMPLETED


def test_a_reviewer_that_never_passes_is_decomposition_review_failed() -> None:
    dispatch = ScriptedDispatch({"decompose": plan(), "decompose-2": plan()})
    outcome = run(orchestrate(review={"agent": "recon"}, reviewMaxIterations=2), dispatch)
    # "ok" is no verdict: read as REVISE.
    assert dispatch.keys == ["decompose", "review-1", "decompose-2", "review-2"]
    assert refusal(outcome) == ("orchestrate", ErrorCode.DECOMPOSITION_REVIEW_FAILED)


# -- verify ---------------------------------------------------------------------------------------


def _verified(policy: str, verdicts: dict[str, str]) -> tuple[ScriptedDispatch, FlowOutcome]:
    dispatch = ScriptedDispatch({"decompose": plan(["a"]), **verdicts})
    call = orchestrate(verify={"agent": "recon"}, verifyPolicy=policy)
    return dispatch, run(call, dispatch)


def test_a_passing_verifier_completes_the_flow() -> None:
    dispatch, outcome = _verified("fail", {"verify-1": "VERDICT: PASS"})
    assert dispatch.keys[-2:] == ["synthesis-1", "verify-1"]
    assert outcome.status is FlowStatus.COMPLETED
    assert "Verified by recon: PASS." in outcome.summary
    verdict = Decision("orchestrate.verify_verdict", "verify-1", "PASS", "line")
    assert outcome.decisions == (verdict,)


def test_verify_policy_note_keeps_the_synthesis_and_notes_the_critique() -> None:
    _dispatch, outcome = _verified("note", {"verify-1": "VERDICT: REVISE\nUncited claim."})
    assert outcome.status is FlowStatus.COMPLETED
    assert "The verifier (verify-1) asked for revision" in outcome.summary


def test_verify_policy_fail_fails_the_flow() -> None:
    _dispatch, outcome = _verified("fail", {"verify-1": "VERDICT: REVISE"})
    assert outcome.status is FlowStatus.FAILED
    assert refusal(outcome) == ("orchestrate", ErrorCode.ORCHESTRATE_VERIFY_FAILED)


def test_verify_policy_revise_reruns_the_debrief_with_the_critique() -> None:
    dispatch, outcome = _verified(
        "revise",
        {
            "synthesis-1": "draft one",
            "verify-1": "VERDICT: REVISE\nCite the schema.",
            "verify-2": "VERDICT: PASS",
        },
    )
    assert dispatch.keys[-4:] == ["synthesis-1", "verify-1", "synthesis-2", "verify-2"]
    told = dispatch.told("synthesis-2")
    assert "## Revise your synthesis" in told
    assert "draft one" in told
    assert "Cite the schema." in told
    assert outcome.status is FlowStatus.COMPLETED


def test_verify_policy_revise_out_of_iterations_is_orchestrate_verify_failed() -> None:
    dispatch = ScriptedDispatch({"decompose": plan(["a"])})
    call = orchestrate(verify={"agent": "recon"}, verifyPolicy="revise", verifyMaxIterations=3)
    outcome = run(call, dispatch)
    assert [k for k in dispatch.keys if k.startswith("verify")] == [
        "verify-1",
        "verify-2",
        "verify-3",
    ]
    assert refusal(outcome) == ("orchestrate", ErrorCode.ORCHESTRATE_VERIFY_FAILED)


# -- handoffs -------------------------------------------------------------------------------------


def test_a_flagged_decomposition_under_fail_spawns_no_worker() -> None:
    dispatch = ScriptedDispatch({"decompose": plan([INJECTION])})
    outcome = run({**orchestrate(), "handoffPolicy": "fail"}, dispatch)
    assert dispatch.keys == ["decompose"]
    assert refusal(outcome) == ("workers", ErrorCode.HANDOFF_POLICY_VIOLATION)


def test_a_quarantined_decomposition_spawns_no_worker() -> None:
    dispatch = ScriptedDispatch({"decompose": plan([INJECTION])})
    outcome = run({**orchestrate(), "handoffPolicy": "quarantine"}, dispatch)
    assert dispatch.keys == ["decompose"]
    assert refusal(outcome) == ("orchestrate", ErrorCode.HANDOFF_POLICY_VIOLATION)


def test_a_flagged_dependency_result_under_fail_stops_before_its_dependent_spawns() -> None:
    dispatch = ScriptedDispatch({"decompose": plan(), "worker-api": INJECTION})
    outcome = run({**orchestrate(), "handoffPolicy": "fail"}, dispatch)
    assert dispatch.keys == ["decompose", "worker-schema", "worker-api"]
    assert refusal(outcome) == ("worker-flows", ErrorCode.HANDOFF_POLICY_VIOLATION)
    assert [r.key for r in outcome.results] == [
        "decompose",
        "worker-schema",
        "worker-api",
        "worker-flows",
    ]


def test_a_flagged_decomposition_under_warn_reaches_workers_under_a_notice() -> None:
    dispatch = ScriptedDispatch({"decompose": plan([INJECTION])})
    run(orchestrate(), dispatch)
    assert dispatch.told("worker-1").startswith("[Handoff injection check:")


# -- the call -------------------------------------------------------------------------------------


def test_the_goal_may_be_orchestrate_task_and_one_is_required() -> None:
    dispatch = ScriptedDispatch({"decompose": plan(["a"])})
    run({"orchestrate": {"task": "Map it."}}, dispatch)
    assert dispatch.told("decompose").startswith("## Goal\nMap it.")
    with pytest.raises(FlowError) as refused:
        parse_call({"orchestrate": {}, "why": WHY})
    assert (refused.value.code, refused.value.path) == (ErrorCode.FLOW_INVALID, "$.task")


def test_the_roles_admission_checks_are_each_orchestrate_role() -> None:
    call = parse_call(
        {**orchestrate(review={"agent": "analyst"}, verify={"agent": "redteam"}), "why": WHY}
    )
    assert [(path, role.agent) for path, role in call.roles()] == [
        ("$.orchestrate.commander", "commander"),
        ("$.orchestrate.review", "analyst"),
        ("$.orchestrate.recon", "recon"),
        ("$.orchestrate.debrief", "debrief"),
        ("$.orchestrate.verify", "redteam"),
    ]


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"maxSubtasks": 0}, "$.orchestrate.maxSubtasks"),
        ({"maxSubtasks": 17}, "$.orchestrate.maxSubtasks"),
        ({"reviewMaxIterations": 5}, "$.orchestrate.reviewMaxIterations"),
        ({"verifyMaxIterations": 0}, "$.orchestrate.verifyMaxIterations"),
        ({"verifyPolicy": "ignore"}, "$.orchestrate.verifyPolicy"),
        ({"workers": []}, "$.orchestrate"),
    ],
)
def test_fields_out_of_bounds_are_refused_at_their_path(fields: dict[str, Any], path: str) -> None:
    with pytest.raises(FlowError) as refused:
        parse_call({**orchestrate(**fields), "why": WHY})
    assert (refused.value.code, refused.value.path) == (ErrorCode.FLOW_INVALID, path)
