"""Grounding: an attestation counts only for deliveries the parent itself observed."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.attestation import Attestation
from domain.attestation.grounding import (
    CLOCK_SKEW,
    MAX_TOOL_CALL_ID_CHARS,
    DeliveryObserved,
    Observation,
    SpawnObserved,
    grounding_problem,
    strict_reader_index,
)
from domain.spec.schema import violations
from tests.unit.domain.attestation.support import (
    BASE_TIME,
    COMPLETED_AT,
    TABLE,
    complete_attestation,
)

SESSION = "/root/squad/s/task-7/session/a.jsonl"
NOW = COMPLETED_AT + timedelta(minutes=5)


def observed(attestation: Attestation, *, session: str = SESSION) -> list[Observation]:
    """What the parent records when it watched every read of ``attestation`` happen."""
    spawn: list[Observation] = [SpawnObserved(at=BASE_TIME - timedelta(seconds=1), child_id="c1")]
    return spawn + [
        DeliveryObserved(
            at=chunk.delivered_at,
            child_id="c1",
            session_file=session,
            tool_call_id=chunk.tool_call_id,
            index=chunk.index,
            chunk_sha256=chunk.sha256,
        )
        for chunk in attestation.chunks
    ]


def judge(
    attestation: Attestation, observations: list[Observation], **changes: object
) -> str | None:
    arguments: dict[str, object] = {"session_file": SESSION, "now": NOW, **changes}
    return grounding_problem(attestation, observations, **arguments)  # type: ignore[arg-type]


def with_chunk(attestation: Attestation, index: int, **changes: Any) -> Attestation:
    chunks = list(attestation.chunks)
    chunks[index] = attrs.evolve(chunks[index], **changes)
    return attrs.evolve(attestation, chunks=tuple(chunks))


def test_an_attestation_of_observed_deliveries_is_grounded() -> None:
    attestation = complete_attestation()
    assert judge(attestation, observed(attestation)) is None


def test_a_task_the_parent_never_spawned_has_no_ground() -> None:
    attestation = complete_attestation()
    deliveries = [o for o in observed(attestation) if isinstance(o, DeliveryObserved)]
    problem = judge(attestation, list(deliveries))
    assert problem is not None
    assert "no record of starting a child" in problem


def test_a_task_without_a_bound_session_has_no_ground() -> None:
    attestation = complete_attestation()
    problem = judge(attestation, observed(attestation), session_file=None)
    assert problem is not None
    assert "no bound session" in problem


def test_deliveries_observed_in_another_session_do_not_count() -> None:
    """A sibling's reads (its own session) never ground this task's attestation."""
    attestation = complete_attestation()
    problem = judge(attestation, observed(attestation, session="/other/session.jsonl"))
    assert problem is not None
    assert "chunks[0].toolCallId 'call-0' is not a squad_spec_read delivery" in problem


@pytest.mark.parametrize(
    ("index", "tool_call_id", "refusal"),
    [
        (1, "call_forged", "chunks[1].toolCallId 'call_forged'"),
        (0, "call-1", "was observed delivering chunk 1, not chunk 0"),
    ],
    ids=["an invented tool call id", "an observed call claimed for another chunk"],
)
def test_a_tool_call_id_that_did_not_deliver_the_chunk_is_refused(
    index: int, tool_call_id: str, refusal: str
) -> None:
    attestation = complete_attestation()
    claimed = with_chunk(attestation, index, tool_call_id=tool_call_id)
    problem = judge(claimed, observed(attestation))
    assert problem is not None
    assert refusal in problem


def test_delivery_before_the_first_spawn_is_refused_beyond_the_skew() -> None:
    attestation = complete_attestation()
    early = BASE_TIME - timedelta(seconds=1) - CLOCK_SKEW - timedelta(milliseconds=1)
    problem = judge(with_chunk(attestation, 0, delivered_at=early), observed(attestation))
    assert problem is not None
    assert "before the task's first spawn" in problem
    within = BASE_TIME - timedelta(seconds=1) - CLOCK_SKEW
    assert judge(with_chunk(attestation, 0, delivered_at=within), observed(attestation)) is None


def test_delivery_or_completion_in_the_future_is_refused() -> None:
    attestation = complete_attestation()
    now = attestation.chunks[-1].delivered_at - CLOCK_SKEW - timedelta(milliseconds=1)
    problem = judge(attestation, observed(attestation), now=now)
    assert problem is not None
    assert "later than now" in problem
    late_completion = COMPLETED_AT - CLOCK_SKEW - timedelta(milliseconds=1)
    problem = judge(attestation, observed(attestation), now=late_completion)
    assert problem is not None
    assert problem.startswith("completedAt")


def test_an_overlong_tool_call_id_is_refused_by_its_length() -> None:
    attestation = complete_attestation()
    long_id = "x" * (MAX_TOOL_CALL_ID_CHARS + 1)
    forged = with_chunk(attestation, 2, tool_call_id=long_id)
    observations = observed(forged)
    problem = judge(forged, observations)
    assert problem == (
        f"chunks[2].toolCallId has {MAX_TOOL_CALL_ID_CHARS + 1} characters; at most "
        f"{MAX_TOOL_CALL_ID_CHARS} are allowed"
    )
    at_bound = with_chunk(attestation, 2, tool_call_id="x" * MAX_TOOL_CALL_ID_CHARS)
    assert judge(at_bound, observed(at_bound)) is None


@given(st.permutations(range(TABLE.chunk_count)))
def test_grounding_does_not_depend_on_observation_order(order: list[int]) -> None:
    attestation = complete_attestation()
    spawn, *deliveries = observed(attestation)
    assert judge(attestation, [spawn, *(deliveries[i] for i in order)]) is None


@pytest.mark.parametrize(
    ("raw", "index"),
    [
        ({"index": 0}, 0),
        ({"index": 7}, 7),
        ({"index": "1"}, None),
        ({"index": True}, None),
        ({"index": None}, None),
        ({"index": 1.0}, None),
        ({"index": -1}, None),
        ({"index": 1, "extra": 0}, None),
        ({}, None),
        ([1], None),
        (None, None),
    ],
)
def test_only_raw_arguments_of_exactly_one_integer_index_are_strict(
    raw: object, index: int | None
) -> None:
    assert strict_reader_index(raw) == index


@given(
    st.one_of(
        st.dictionaries(
            st.sampled_from(["index", "Index", "extra"]),
            st.one_of(
                st.integers(min_value=-3, max_value=10**12),
                st.booleans(),
                st.none(),
                st.floats(allow_nan=False, allow_infinity=False),
                st.text(max_size=3),
            ),
            max_size=2,
        ),
        st.lists(st.integers(), max_size=2),
        st.none(),
    )
)
def test_the_strict_index_rule_is_exactly_the_reader_tools_schema(raw: object) -> None:
    """The child's hot path checks without jsonschema; it must accept what the schema does."""
    accepted = isinstance(raw, dict) and not violations("spec-read-call", raw)
    assert (strict_reader_index(raw) is not None) is accepted
