"""Coverage state machine (§9): rejected and tampered deliveries, re-verification after
loading, the structural invariants, and squads that need no coverage."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from domain.attestation import (
    NOT_REQUIRED,
    ChunkDelivery,
    ChunkIndexOutOfRange,
    Coverage,
    CoverageNotRequired,
    CoverageState,
)
from domain.chunks import ChunkTable
from tests.unit.domain.attestation import support
from tests.unit.domain.attestation.support import BINDING, OTHER_SHA256, TABLE, commit_all, delivery


@pytest.mark.parametrize("index", [TABLE.chunk_count, TABLE.chunk_count + 5, 10**9])
def test_out_of_range_index_raises_and_records_nothing(index: int) -> None:
    coverage = commit_all([0])
    out_of_range = ChunkDelivery(
        index=index,
        start_byte=0,
        end_byte_exclusive=1,
        bytes=1,
        sha256=OTHER_SHA256,
        tool_call_id="call-x",
        delivered_at=support.BASE_TIME,
    )
    with pytest.raises(
        ChunkIndexOutOfRange, match=f"valid indices are 0..{support.LAST}"
    ) as caught:
        coverage.commit(out_of_range, TABLE)
    assert caught.value.index == index
    assert coverage.committed_indices() == (0,)
    assert coverage.state is CoverageState.READING


def test_out_of_range_is_an_error_even_after_invalid() -> None:
    invalid = Coverage.required(BINDING).invalidate("canonical file changed")
    with pytest.raises(ChunkIndexOutOfRange):
        invalid.commit(attrs.evolve(delivery(0), index=TABLE.chunk_count), TABLE)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"sha256": OTHER_SHA256}, "chunk 2: sha256 is not the canonical chunk hash"),
        (
            {
                "start_byte": TABLE.chunk(2).start_byte - 1,
                "bytes": TABLE.chunk(2).bytes + 1,
            },
            f"chunk 2: startByte {TABLE.chunk(2).start_byte - 1} is not canonical "
            f"{TABLE.chunk(2).start_byte}",
        ),
        (
            {
                "end_byte_exclusive": TABLE.chunk(2).end_byte_exclusive + 1,
                "bytes": TABLE.chunk(2).bytes + 1,
            },
            f"chunk 2: endByteExclusive {TABLE.chunk(2).end_byte_exclusive + 1} is not "
            f"canonical {TABLE.chunk(2).end_byte_exclusive}",
        ),
    ],
)
def test_tampered_new_delivery_invalidates(change: dict[str, Any], reason: str) -> None:
    coverage = commit_all([0])
    invalid = coverage.commit(attrs.evolve(delivery(2), **change), TABLE)
    assert invalid.state is CoverageState.INVALID
    assert invalid.invalid_reason == f"delivery does not match the canonical spec: {reason}"
    assert invalid.committed_indices() == (0,)


def test_commit_against_a_different_canonical_table_invalidates() -> None:
    other = ChunkTable.of(support.multibyte_spec(100_000, seed=99))
    invalid = Coverage.required(BINDING).commit(delivery(0, table=other), other)
    assert invalid.state is CoverageState.INVALID
    assert invalid.invalid_reason == "canonical specSha256 differs from the bound specSha256"
    assert invalid.deliveries == ()


def test_commit_on_invalid_stays_invalid() -> None:
    invalid = commit_all([0]).invalidate("canonical file changed")
    assert invalid.commit(delivery(1), TABLE) is invalid
    assert invalid.commit(delivery(0), TABLE) is invalid


def test_invalidate_keeps_the_first_reason() -> None:
    invalid = Coverage.required(BINDING).invalidate("first")
    assert invalid.invalidate("second") is invalid
    assert invalid.invalid_reason == "first"


def test_verify_leaves_canonical_partial_coverage_unchanged() -> None:
    coverage = commit_all([0, 2])
    assert coverage.verify(TABLE) is coverage


def test_verify_keeps_complete_coverage_complete() -> None:
    coverage = support.complete_coverage()
    assert coverage.verify(TABLE) is coverage


def test_verify_invalidates_a_tampered_record() -> None:
    coverage = commit_all([0, 1])
    tampered = attrs.evolve(
        coverage,
        deliveries=(coverage.deliveries[0], attrs.evolve(delivery(1), sha256=OTHER_SHA256)),
    )
    verified = tampered.verify(TABLE)
    assert verified.state is CoverageState.INVALID
    assert verified.invalid_reason == (
        "recorded delivery is not canonical: chunk 1: sha256 is not the canonical chunk hash"
    )


def test_verify_invalidates_complete_coverage_when_the_canonical_file_changed() -> None:
    other = ChunkTable.of(support.multibyte_spec(100_000, seed=99))
    verified = support.complete_coverage().verify(other)
    assert verified.state is CoverageState.INVALID


def test_verify_on_invalid_is_a_no_op() -> None:
    invalid = Coverage.required(BINDING).invalidate("x")
    assert invalid.verify(TABLE) is invalid


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"state": CoverageState.NOT_REQUIRED}, "legacy squad"),
        ({"state": CoverageState.REQUIRED, "deliveries": (delivery(0),)}, "cannot hold 1"),
        ({"state": CoverageState.READING}, "cannot hold 0"),
        ({"state": CoverageState.COMPLETE, "deliveries": (delivery(0),)}, "cannot hold 1"),
        ({"state": CoverageState.INVALID}, "exactly when the state is invalid"),
        (
            {"state": CoverageState.READING, "deliveries": (delivery(0),), "invalid_reason": "x"},
            "exactly when the state is invalid",
        ),
        ({"state": CoverageState.INVALID, "invalid_reason": "Ошибка"}, "printable ASCII"),
        ({"state": CoverageState.INVALID, "invalid_reason": ""}, "printable ASCII"),
        (
            {"state": CoverageState.READING, "deliveries": (delivery(2), delivery(0))},
            "ascending",
        ),
        (
            {"state": CoverageState.READING, "deliveries": (delivery(0), delivery(0))},
            "ascending",
        ),
        (
            {
                "state": CoverageState.READING,
                "deliveries": (
                    delivery(0),
                    attrs.evolve(
                        delivery(1),
                        start_byte=TABLE.chunk(1).start_byte + 1,
                        bytes=TABLE.chunk(1).bytes - 1,
                    ),
                ),
            },
            "not contiguous",
        ),
        (
            {
                "state": CoverageState.READING,
                "deliveries": (
                    attrs.evolve(delivery(0), start_byte=1, bytes=TABLE.chunk(0).bytes - 1),
                ),
            },
            "chunk 0 must start at byte 0",
        ),
    ],
)
def test_coverage_refuses_impossible_values(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Coverage(binding=BINDING, **fields)


def test_coverage_refuses_a_record_beyond_the_binding() -> None:
    beyond = attrs.evolve(delivery(0), index=TABLE.chunk_count)
    with pytest.raises(ChunkIndexOutOfRange):
        Coverage(binding=BINDING, state=CoverageState.READING, deliveries=(beyond,))


def test_legacy_squads_need_nothing() -> None:
    assert isinstance(NOT_REQUIRED, CoverageNotRequired)
    assert NOT_REQUIRED.state is CoverageState.NOT_REQUIRED
    assert NOT_REQUIRED.missing_indices() == ()
    assert not hasattr(NOT_REQUIRED, "commit")
