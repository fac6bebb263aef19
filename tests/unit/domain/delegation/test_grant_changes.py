"""Seed §3 and §8: the policy generation is immutable human policy, and only an explicit human
change renews the allowance. Bringing a session up to date never looks at the call's grant; a
call under another grant is refused by name, and only ``renewed`` starts a new generation."""

from __future__ import annotations

from domain.delegation.policy import Grant, SessionGrant
from domain.delegation.upkeep import (
    RENEW_COMMAND,
    brought_up_to_date,
    grant_changed,
    holds,
    renewed,
)
from domain.errors import ErrorCode
from tests.unit.domain.delegation.states import NOW_MS, admitted_state

WIDER = Grant(source_roots=("/work",), session=SessionGrant(allowance_requests=3))


def test_upkeep_under_any_grant_keeps_the_generation_the_work_and_the_allowance() -> None:
    state = admitted_state()
    decision = brought_up_to_date(state, NOW_MS + 1, changed=lambda _: False, alive=None, me=None)
    assert decision.state == state
    assert decision.revoked == ()


def test_only_the_grant_the_session_was_created_under_holds() -> None:
    state = admitted_state()
    assert holds(state, Grant())
    assert not holds(state, WIDER)
    assert holds(renewed(state, WIDER, NOW_MS).state, WIDER)


def test_the_refusal_names_both_grants_and_the_renew_command() -> None:
    state = admitted_state()
    error = grant_changed(state, WIDER)
    assert error.code is ErrorCode.DELEGATE_GRANT_CHANGED
    assert f"policy generation {state.policy_generation}" in error.message
    assert state.policy_digest[:16] in error.message
    assert WIDER.digest()[:16] in error.message
    assert "sourceRoots /work" in error.message
    assert "allowanceRequests 3" in error.message
    assert f"`{RENEW_COMMAND} --session {state.session}`" in error.message


def test_a_renewal_records_what_was_consumed_and_frees_the_new_allowance() -> None:
    state = admitted_state()
    decision = renewed(state, WIDER, NOW_MS)
    (renewal,) = decision.state.renewals
    assert (renewal.policy_generation, renewal.allowance, renewal.consumed_before) == (2, 3, 0)
    # The queued job held no worker: cancelled and its reservation returned at once.
    assert decision.revoked == ()
    assert decision.state.ledger.reserved == 0
    assert decision.state.ledger.free() == 3
