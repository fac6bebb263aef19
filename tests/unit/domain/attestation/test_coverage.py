"""Coverage state machine (§9): committing deliveries in any order, and duplicates."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.attestation import Attestation, Coverage, CoverageNotComplete, CoverageState
from tests.unit.domain.attestation.support import (
    BASE_TIME,
    BINDING,
    COMPLETED_AT,
    LARGE_BINDING,
    LARGE_TABLE,
    OTHER_SHA256,
    TABLE,
    commit_all,
    complete_attestation,
    complete_coverage,
    delivery,
)


def test_required_coverage_has_every_index_missing() -> None:
    coverage = Coverage.required(BINDING)
    assert coverage.state is CoverageState.REQUIRED
    assert coverage.deliveries == ()
    assert coverage.missing_indices() == tuple(range(TABLE.chunk_count))


def test_first_commit_moves_to_reading() -> None:
    coverage = Coverage.required(BINDING).commit(delivery(2), TABLE)
    assert coverage.state is CoverageState.READING
    assert coverage.committed_indices() == (2,)
    assert coverage.missing_indices() == tuple(i for i in range(TABLE.chunk_count) if i != 2)


def test_all_chunks_in_order_complete() -> None:
    coverage = complete_coverage()
    assert coverage.state is CoverageState.COMPLETE
    assert coverage.missing_indices() == ()
    assert coverage.invalid_reason is None


def test_reverse_order_completes_with_chunks_ascending() -> None:
    coverage = commit_all(list(reversed(range(TABLE.chunk_count))))
    assert coverage.state is CoverageState.COMPLETE
    assert coverage.committed_indices() == tuple(range(TABLE.chunk_count))
    assert Attestation.of(coverage, COMPLETED_AT) == complete_attestation()


@pytest.mark.parametrize("missing", range(TABLE.chunk_count))
def test_one_missing_chunk_is_not_complete_and_is_listed(missing: int) -> None:
    coverage = commit_all([i for i in range(TABLE.chunk_count) if i != missing])
    assert coverage.state is CoverageState.READING
    assert coverage.missing_indices() == (missing,)
    with pytest.raises(CoverageNotComplete, match="coverage is reading"):
        Attestation.of(coverage, COMPLETED_AT)


def test_missing_indices_is_the_full_sorted_list() -> None:
    coverage = commit_all([7, 2], table=LARGE_TABLE, binding=LARGE_BINDING)
    assert coverage.missing_indices() == (0, 1, 3, 4, 5, 6, 8, 9, 10, 11, 12)


@st.composite
def delivery_schedules(draw: st.DrawFn) -> list[tuple[int, bool]]:
    """Every index once in any order, plus duplicates placed anywhere after their first
    delivery. ``(index, is_duplicate)``."""
    order = draw(st.permutations(range(LARGE_TABLE.chunk_count)))
    schedule = [(index, False) for index in order]
    for index in draw(st.lists(st.sampled_from(order), max_size=12)):
        first = schedule.index((index, False))
        position = draw(st.integers(min_value=first + 1, max_value=len(schedule)))
        schedule.insert(position, (index, True))
    return schedule


@settings(max_examples=60, deadline=None)
@given(schedule=delivery_schedules())
def test_any_order_with_duplicates_reaches_the_same_attestation(
    schedule: list[tuple[int, bool]],
) -> None:
    coverage = Coverage.required(LARGE_BINDING)
    for step, (index, is_duplicate) in enumerate(schedule):
        # A duplicate is a genuine re-read: other tool call, later time, same bytes.
        record = (
            delivery(index, table=LARGE_TABLE, call=f"dup-{step}", at=COMPLETED_AT)
            if is_duplicate
            else delivery(index, table=LARGE_TABLE)
        )
        coverage = coverage.commit(record, LARGE_TABLE)
        assert coverage.state is not CoverageState.INVALID
    in_order = complete_coverage(table=LARGE_TABLE, binding=LARGE_BINDING)
    assert coverage == in_order
    attestation = Attestation.of(coverage, COMPLETED_AT)
    assert [c.index for c in attestation.chunks] == list(range(LARGE_TABLE.chunk_count))
    assert [c.tool_call_id for c in attestation.chunks] == [
        f"call-{i}" for i in range(LARGE_TABLE.chunk_count)
    ]


def test_identical_duplicate_keeps_the_original_record() -> None:
    coverage = commit_all([1])
    again = coverage.commit(delivery(1, call="call-later", at=BASE_TIME + timedelta(days=1)), TABLE)
    assert again is coverage
    kept = again.recorded(1)
    assert kept is not None
    assert kept.tool_call_id == "call-1"
    assert kept.delivered_at == BASE_TIME + timedelta(seconds=1)


def test_identical_duplicate_after_complete_rewrites_nothing() -> None:
    coverage = complete_coverage()
    again = coverage.commit(delivery(0, call="call-redundant", at=COMPLETED_AT), TABLE)
    assert again is coverage
    assert Attestation.of(again, COMPLETED_AT) == complete_attestation()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"sha256": OTHER_SHA256}, "sha256"),
        (
            {
                "start_byte": TABLE.chunk(1).start_byte + 1,
                "bytes": TABLE.chunk(1).bytes - 1,
            },
            "startByte",
        ),
        (
            {
                "end_byte_exclusive": TABLE.chunk(1).end_byte_exclusive - 1,
                "bytes": TABLE.chunk(1).bytes - 1,
            },
            "endByteExclusive",
        ),
    ],
)
def test_conflicting_duplicate_invalidates(change: dict[str, Any], field: str) -> None:
    coverage = commit_all([1])
    conflicting = attrs.evolve(delivery(1, call="call-other"), **change)
    invalid = coverage.commit(conflicting, TABLE)
    assert invalid.state is CoverageState.INVALID
    assert invalid.invalid_reason == (
        f"conflicting record for chunk 1: {field} differs from the committed delivery"
    )
    # The conflicting claim is never accepted; the original record stays for audit.
    assert invalid.deliveries == coverage.deliveries


def test_conflicting_duplicate_after_complete_invalidates() -> None:
    invalid = complete_coverage().commit(attrs.evolve(delivery(0), sha256=OTHER_SHA256), TABLE)
    assert invalid.state is CoverageState.INVALID
    assert invalid.invalid_reason is not None
    assert invalid.invalid_reason.startswith("conflicting record for chunk 0")
    with pytest.raises(CoverageNotComplete):
        Attestation.of(invalid, COMPLETED_AT)
