"""``workflow``'s approval phases: asked where a person can be asked, persisted and refused
headless, declined; a granted approval written as a single-use, expiring receipt bound to the
workflow and the resolved handoff policy, honoured after a kill, reopened when stale or
expired, and a hard failure when spent or malformed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from domain.errors import ErrorCode
from domain.flows.mode_parts import FlowStatus
from domain.flows.workflow_receipts import (
    ReceiptTerms,
    Standing,
    grant,
    receipt_of,
    standing,
)
from tests.fakes.workflow import Person
from tests.unit.domain.flows.test_judging import ScriptedDispatch
from tests.unit.domain.flows.test_workflow import (
    STATE_PATH,
    Killed,
    KilledAt,
    World,
    approval,
    code_of,
    resumed,
    work,
    workflow,
)

GATED = workflow(work("plan"), approval("go", "Deploy to staging?"), work("deploy"), work("verify"))
DAY_MS = 86_400_000


def test_an_approval_is_asked_and_granted_lets_the_gated_phases_run() -> None:
    world = World()
    person = Person([True])
    dispatch = ScriptedDispatch({})
    outcome = world.run(GATED, dispatch, person)
    assert outcome.status is FlowStatus.COMPLETED
    assert dispatch.keys == ["phase-plan", "phase-deploy", "phase-verify"]
    ((title, message),) = person.asked
    assert title == "pi-squad flow: workflow approval"
    assert "Deploy to staging?" in message
    assert "deploy (recon), verify (recon)" in message
    receipt = world.state()["receipts"]["go"]
    assert receipt["schemaVersion"] == "pi-flows.approval-receipt.v1"
    assert receipt["consumedAt"] is not None
    assert receipt["expiresAt"] - receipt["grantedAt"] == DAY_MS
    assert receipt["handoffPolicy"] == "warn"
    assert receipt["receiptDigest"].startswith("sha256:")
    assert world.state()["phases"]["go"]["status"] == "completed"


def test_headless_an_approval_persists_the_state_and_requires_approval() -> None:
    world = World()
    dispatch = ScriptedDispatch({})
    outcome = world.run(GATED, dispatch)
    assert code_of(outcome) is ErrorCode.WORKFLOW_APPROVAL_REQUIRED
    assert '"resume": true' in (outcome.results[-1].error or "")
    assert dispatch.keys == ["phase-plan"]
    state = world.state()
    assert state["phases"]["go"]["status"] == "awaiting-approval"
    assert state["receipts"] == {}
    # Resumed where a person can be asked: the plan is not run again.
    person = Person([True])
    again = ScriptedDispatch({})
    assert world.run(resumed(GATED), again, person).status is FlowStatus.COMPLETED
    assert again.keys == ["phase-deploy", "phase-verify"]
    assert len(person.asked) == 1


def test_a_declined_approval_runs_no_gated_phase() -> None:
    world = World()
    dispatch = ScriptedDispatch({})
    outcome = world.run(GATED, dispatch, Person([False]))
    assert code_of(outcome) is ErrorCode.WORKFLOW_APPROVAL_DENIED
    assert dispatch.keys == ["phase-plan"]
    assert "go" not in world.state()["receipts"]


def test_a_kill_during_a_gated_phase_resumes_it_under_the_receipt_spent_when_it_started() -> None:
    world = World()
    with pytest.raises(Killed):
        world.run(GATED, KilledAt({}, at="phase-deploy"), Person([True]))
    # The receipt is spent, and the approval completed, in the write before the gated spawn.
    state = world.state()
    assert state["receipts"]["go"]["consumedAt"] is not None
    assert state["phases"]["go"]["status"] == "completed"
    person = Person([True])
    dispatch = ScriptedDispatch({})
    assert world.run(resumed(GATED), dispatch, person).status is FlowStatus.COMPLETED
    assert person.asked == []
    assert dispatch.keys == ["phase-deploy", "phase-verify"]


def unspent_world(ttl_ms: int = DAY_MS, policy: str = "warn") -> tuple[World, dict[str, Any]]:
    """A state whose approval was granted and not yet spent (the process died right after)."""
    world = World()
    document = workflow(work("plan"), approval("go"), work("deploy"), approvalTtlMs=ttl_ms)
    document["handoffPolicy"] = policy
    with pytest.raises(Killed):
        world.run(document, KilledAt({}, at="phase-deploy"), Person([True]))
    state = world.state()
    receipt = dict(state["receipts"]["go"])
    receipt["consumedAt"] = None
    state["receipts"]["go"] = receipt
    state["phases"]["go"] = {"status": "approved", "at": receipt["grantedAt"]}
    world.fs.add_file(STATE_PATH, json.dumps(state).encode())
    return world, document


def test_an_unspent_valid_receipt_is_not_asked_again_and_is_spent_once() -> None:
    world, document = unspent_world()
    person = Person()
    dispatch = ScriptedDispatch({})
    assert world.run(resumed(document), dispatch, person).status is FlowStatus.COMPLETED
    assert person.asked == []
    assert dispatch.keys == ["phase-deploy"]
    assert world.state()["receipts"]["go"]["consumedAt"] is not None


def test_an_expired_receipt_reopens_consent() -> None:
    world, document = unspent_world(ttl_ms=60_000)
    world.clock.advance(61)
    headless = world.run(resumed(document), ScriptedDispatch({}))
    assert code_of(headless) is ErrorCode.APPROVAL_RECEIPT_EXPIRED
    person = Person([True])
    dispatch = ScriptedDispatch({})
    assert world.run(resumed(document), dispatch, person).status is FlowStatus.COMPLETED
    assert len(person.asked) == 1
    assert dispatch.keys == ["phase-deploy"]


def test_a_changed_handoff_policy_makes_the_receipt_stale() -> None:
    world, document = unspent_world(policy="warn")
    stricter = resumed({**document, "modeHandoffPolicy": {"workflow": "fail"}})
    outcome = world.run(stricter, ScriptedDispatch({}))
    assert code_of(outcome) is ErrorCode.APPROVAL_RECEIPT_STALE
    person = Person([True])
    assert world.run(stricter, ScriptedDispatch({}), person).status is FlowStatus.COMPLETED
    assert len(person.asked) == 1
    assert world.state()["receipts"]["go"]["handoffPolicy"] == "fail"


def test_a_spent_receipt_on_an_unfinished_approval_is_a_hard_failure() -> None:
    world, document = unspent_world()
    state = world.state()
    state["receipts"]["go"]["consumedAt"] = state["receipts"]["go"]["grantedAt"] + 1
    world.fs.add_file(STATE_PATH, json.dumps(state).encode())
    person = Person([True])
    outcome = world.run(resumed(document), ScriptedDispatch({}), person)
    assert code_of(outcome) is ErrorCode.APPROVAL_RECEIPT_CONSUMED
    assert person.asked == []


@pytest.mark.parametrize("field", ["expiresAt", "actor", "phaseId", "receiptDigest"])
def test_an_edited_receipt_is_invalid_and_never_asked_over(field: str) -> None:
    world, document = unspent_world()
    state = world.state()
    receipt = state["receipts"]["go"]
    receipt[field] = receipt[field] + 1 if isinstance(receipt[field], int) else "x"
    world.fs.add_file(STATE_PATH, json.dumps(state).encode())
    person = Person([True])
    outcome = world.run(resumed(document), ScriptedDispatch({}), person)
    assert code_of(outcome) is ErrorCode.APPROVAL_RECEIPT_INVALID
    assert person.asked == []


# -- the receipt alone --------------------------------------------------------------------------

TERMS = ReceiptTerms("sha256:" + "a" * 64, "go", "sha256:" + "b" * 64, "user", "warn")


def test_a_receipt_round_trips_through_its_document() -> None:
    receipt = grant(TERMS, "session-user", 1000, 60_000)
    assert receipt_of(receipt.document()) == receipt
    assert receipt_of(receipt.consumed(2000).document()) == receipt.consumed(2000)


@pytest.mark.parametrize(
    ("terms", "now", "consumed", "expected"),
    [
        (TERMS, 1000, False, Standing.VALID),
        (TERMS, 60_999, False, Standing.VALID),
        (TERMS, 61_000, False, Standing.EXPIRED),
        (TERMS, 1000, True, Standing.CONSUMED),
        (
            ReceiptTerms("sha256:" + "c" * 64, "go", TERMS.gated_digest, "user", "warn"),
            1000,
            False,
            Standing.STALE,
        ),
        (
            ReceiptTerms(TERMS.workflow_digest, "go", TERMS.gated_digest, "all", "warn"),
            1000,
            False,
            Standing.STALE,
        ),
    ],
)
def test_a_receipts_standing(
    terms: ReceiptTerms, now: int, consumed: bool, expected: Standing
) -> None:
    receipt = grant(TERMS, "session-user", 1000, 60_000)
    if consumed:
        receipt = receipt.consumed(1500)
    assert standing(receipt, terms, now) is expected


def test_spent_outranks_stale_and_expired() -> None:
    receipt = grant(TERMS, "session-user", 1000, 60_000).consumed(1500)
    other = ReceiptTerms(TERMS.workflow_digest, "go", TERMS.gated_digest, "user", "fail")
    assert standing(receipt, other, 10**9) is Standing.CONSUMED
    assert standing(None, TERMS, 0) is Standing.INVALID


@pytest.mark.parametrize(
    "document",
    [None, [], {}, {"schemaVersion": "pi-flows.approval-receipt.v2"}],
)
def test_a_malformed_receipt_document_reads_as_none(document: object) -> None:
    assert receipt_of(document) is None
