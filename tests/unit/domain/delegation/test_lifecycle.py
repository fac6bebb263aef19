"""The lifecycle is exactly seed §6's diagram; settlement is a separate machine."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.delegation.lifecycle import (
    TERMINAL,
    TRANSITIONS,
    Settlement,
    State,
    settle,
    transition,
)
from domain.errors import IllegalTransition
from domain.squad.transitions import move_squad
from tests.builders import squad_record

S = State
DIAGRAM = {
    (S.PROPOSED, S.REJECTED),
    (S.PROPOSED, S.QUEUED),
    (S.QUEUED, S.RUNNING),
    (S.QUEUED, S.CANCELLED),
    (S.RUNNING, S.READY),
    (S.RUNNING, S.INCOMPLETE),
    (S.RUNNING, S.INVALID),
    (S.RUNNING, S.FAILED),
    (S.RUNNING, S.CANCELLED),
    (S.RUNNING, S.EXPIRED),
    (S.READY, S.STALE),
    (S.READY, S.ACCEPTED),
    (S.READY, S.DISCARDED),
    (S.INCOMPLETE, S.DISCARDED),
    (S.INVALID, S.DISCARDED),
    (S.FAILED, S.DISCARDED),
    (S.ACCEPTED, S.STALE),  # seed §6's text: a changed source stales an accepted review
}


def test_the_edges_are_the_diagram() -> None:
    edges = {(a, b) for a, targets in TRANSITIONS.items() for b in targets}
    assert edges == DIAGRAM


def test_cancelled_and_expired_never_publish() -> None:
    assert {S.CANCELLED, S.EXPIRED, S.DISCARDED, S.STALE, S.REJECTED} <= TERMINAL
    assert TRANSITIONS[S.ACCEPTED] == {S.STALE}  # an accepted result never becomes ready again
    for state in (S.CANCELLED, S.EXPIRED):
        with pytest.raises(IllegalTransition):
            transition(state, S.READY)


@given(st.lists(st.sampled_from(list(State)), max_size=12))
def test_a_walk_succeeds_exactly_along_diagram_edges(walk: list[State]) -> None:
    current = S.PROPOSED
    for target in walk:
        if (current, target) in DIAGRAM:
            current = transition(current, target)
        else:
            with pytest.raises(IllegalTransition):
                transition(current, target)


@given(st.lists(st.sampled_from(list(Settlement)), max_size=8))
def test_settlement_never_leaves_settled(walk: list[Settlement]) -> None:
    current = Settlement.RESERVED
    for target in walk:
        try:
            current = settle(current, target)
        except IllegalTransition:
            continue
    if Settlement.SETTLED in walk and current is Settlement.SETTLED:
        for target in Settlement:
            with pytest.raises(IllegalTransition, match="settlement: settled ->"):
                settle(current, target)


def test_squads_and_delegation_raise_the_one_illegal_transition() -> None:
    squad = squad_record("s")
    with pytest.raises(IllegalTransition) as squad_error:
        move_squad(squad, squad.status)
    with pytest.raises(IllegalTransition) as attempt_error:
        transition(S.ACCEPTED, S.READY)
    assert type(squad_error.value) is type(attempt_error.value)
    # One wording: what moved, then the edge the table does not have.
    assert str(squad_error.value) == "squad s: running -> running is not a legal transition"
    assert str(attempt_error.value) == (
        "attempt lifecycle: accepted -> ready is not a legal transition"
    )
