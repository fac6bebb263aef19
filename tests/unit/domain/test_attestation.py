"""Coverage state machine (§9) and building the attestation from COMPLETE coverage."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.attestation import (
    NOT_REQUIRED,
    Attestation,
    AttestationValid,
    ChunkDelivery,
    ChunkIndexOutOfRange,
    Coverage,
    CoverageNotComplete,
    CoverageNotRequired,
    CoverageState,
    SpecBinding,
    validate_attestation_bytes,
)
from domain.chunks import CHUNK_BYTES, ChunkTable
from tests.unit.domain.attestation_support import (
    BASE_TIME,
    BINDING,
    COMPLETED_AT,
    CONTRACT_HEAD_KEYS,
    LARGE_BINDING,
    LARGE_TABLE,
    OTHER_SHA256,
    SPEC,
    SQUAD_ID,
    TABLE,
    TASK_ID,
    boundaries_moved_back,
    commit_all,
    complete_attestation,
    complete_coverage,
    delivery,
    multibyte_spec,
)

LAST = TABLE.chunk_count - 1


def test_fixture_specs_are_multibyte_and_multi_chunk() -> None:
    # The tests below only mean something if chunk ends really move off continuation bytes.
    assert TABLE.chunk_count >= 4
    assert LARGE_TABLE.chunk_count >= 12
    assert boundaries_moved_back(TABLE) == TABLE.chunk_count - 1
    assert boundaries_moved_back(LARGE_TABLE) >= 8
    assert len(SPEC.decode()) < len(SPEC)


# -- SpecBinding ------------------------------------------------------------------------------


def test_binding_of_table_copies_the_canonical_identity() -> None:
    assert (
        SpecBinding(
            squad_id=SQUAD_ID,
            task_id=TASK_ID,
            spec_sha256=TABLE.spec_sha256,
            spec_bytes=len(SPEC),
            chunk_bytes=CHUNK_BYTES,
            chunk_count=TABLE.chunk_count,
        )
        == BINDING
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"squad_id": "Squad"}, "squad ID"),
        ({"squad_id": ""}, "squad ID"),
        ({"task_id": "task_7"}, "task ID"),
        ({"task_id": "t" * 65}, "task ID"),
        ({"spec_sha256": OTHER_SHA256.upper().replace("0", "A")}, "specSha256"),
        ({"spec_sha256": "ab" * 31}, "specSha256"),
        ({"spec_bytes": 0}, "spec_bytes must be positive"),
        ({"chunk_bytes": 16384}, "chunkBytes must be 32768"),
        ({"chunk_count": 0}, "chunk_count must be positive"),
        ({"chunk_count": 1}, "impossible"),
        ({"spec_bytes": 3, "chunk_count": 4}, "impossible"),
    ],
)
def test_binding_rejects_invalid_fields(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        attrs.evolve(BINDING, **change)


def test_binding_rejects_bool_as_a_count() -> None:
    with pytest.raises(TypeError, match="must be an int"):
        attrs.evolve(BINDING, chunk_count=True)


def test_binding_names_the_field_a_table_disagrees_on() -> None:
    other = ChunkTable.of(multibyte_spec(100_000, seed=99))
    assert BINDING.table_mismatch(TABLE) is None
    assert BINDING.table_mismatch(other) == (
        "canonical specSha256 differs from the bound specSha256"
    )


def test_binding_refuses_a_table_that_does_not_tile_the_file() -> None:
    first, second, *rest = TABLE.chunks
    shifted = (
        attrs.evolve(first, end_byte_exclusive=first.end_byte_exclusive - 1),
        second,
        *rest,
    )
    assert BINDING.table_mismatch(attrs.evolve(TABLE, chunks=shifted)) == (
        "canonical chunk table is not contiguous at chunk 1"
    )


# -- ChunkDelivery ----------------------------------------------------------------------------


def test_delivery_of_a_chunk_copies_its_metadata() -> None:
    ref = TABLE.chunk(2)
    record = delivery(2)
    assert (record.index, record.start_byte, record.end_byte_exclusive, record.sha256) == (
        ref.index,
        ref.start_byte,
        ref.end_byte_exclusive,
        ref.sha256,
    )
    assert record.bytes == ref.bytes
    assert record.tool_call_id == "call-2"


def test_delivery_requires_length_to_match_offsets() -> None:
    with pytest.raises(ValueError, match="bytes 9 is not endByteExclusive - startByte"):
        attrs.evolve(delivery(0), bytes=9)


def test_delivery_requires_a_tool_call_id() -> None:
    with pytest.raises(ValueError, match="tool_call_id must be a non-empty string"):
        attrs.evolve(delivery(0), tool_call_id="")


def test_delivery_refuses_naive_time_and_holds_utc_milliseconds() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        attrs.evolve(delivery(0), delivered_at=datetime(2026, 1, 1, 12))
    plus_two = timezone(timedelta(hours=2))
    record = attrs.evolve(
        delivery(0), delivered_at=datetime(2026, 1, 1, 14, 0, 0, 123999, tzinfo=plus_two)
    )
    assert record.delivered_at == datetime(2026, 1, 1, 12, 0, 0, 123000, tzinfo=UTC)
    assert record.delivered_at.tzinfo is UTC


def test_delivery_refuses_a_malformed_hash() -> None:
    with pytest.raises(ValueError, match="sha256"):
        attrs.evolve(delivery(0), sha256=TABLE.chunk(0).sha256.upper())


# -- Coverage: the happy path -----------------------------------------------------------------


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


# -- Coverage: duplicates ---------------------------------------------------------------------


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


# -- Coverage: rejected deliveries ------------------------------------------------------------


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
        delivered_at=BASE_TIME,
    )
    with pytest.raises(ChunkIndexOutOfRange, match=f"valid indices are 0..{LAST}") as caught:
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
    other = ChunkTable.of(multibyte_spec(100_000, seed=99))
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


# -- Coverage: verify (re-check after loading) ------------------------------------------------


def test_verify_leaves_canonical_partial_coverage_unchanged() -> None:
    coverage = commit_all([0, 2])
    assert coverage.verify(TABLE) is coverage


def test_verify_keeps_complete_coverage_complete() -> None:
    coverage = complete_coverage()
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
    other = ChunkTable.of(multibyte_spec(100_000, seed=99))
    verified = complete_coverage().verify(other)
    assert verified.state is CoverageState.INVALID


def test_verify_on_invalid_is_a_no_op() -> None:
    invalid = Coverage.required(BINDING).invalidate("x")
    assert invalid.verify(TABLE) is invalid


# -- Coverage: structural invariants ----------------------------------------------------------


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


# -- NOT_REQUIRED -----------------------------------------------------------------------------


def test_legacy_squads_need_nothing() -> None:
    assert isinstance(NOT_REQUIRED, CoverageNotRequired)
    assert NOT_REQUIRED.state is CoverageState.NOT_REQUIRED
    assert NOT_REQUIRED.missing_indices() == ()
    assert not hasattr(NOT_REQUIRED, "commit")


# -- Attestation ------------------------------------------------------------------------------


def test_attestation_requires_complete_coverage() -> None:
    with pytest.raises(CoverageNotComplete, match="coverage is required"):
        Attestation.of(Coverage.required(BINDING), COMPLETED_AT)


def test_attestation_refuses_completed_at_before_the_last_delivery() -> None:
    last_delivery = BASE_TIME + timedelta(seconds=LAST)
    with pytest.raises(ValueError, match=f"earlier than chunk {LAST}'s deliveredAt"):
        Attestation.of(complete_coverage(), last_delivery - timedelta(milliseconds=1))
    at_last = Attestation.of(complete_coverage(), last_delivery)
    assert at_last.completed_at == last_delivery


def test_attestation_json_has_exactly_the_contract_keys_in_order() -> None:
    document = complete_attestation().to_json_dict()
    assert list(document) == [*CONTRACT_HEAD_KEYS, "chunks", "completedAt"]
    for chunk in document["chunks"]:
        assert list(chunk) == [
            "index",
            "startByte",
            "endByteExclusive",
            "bytes",
            "sha256",
            "toolCallId",
            "deliveredAt",
        ]


def test_attestation_json_values() -> None:
    document = complete_attestation().to_json_dict()
    assert document["version"] == 1
    assert document["state"] == "complete"
    assert document["squadId"] == SQUAD_ID
    assert document["taskId"] == TASK_ID
    assert document["specSha256"] == TABLE.spec_sha256
    assert document["specBytes"] == len(SPEC)
    assert document["chunkBytes"] == 32768
    assert document["chunkCount"] == TABLE.chunk_count
    assert document["completedAt"] == "2026-12-02T12:22:33.456Z"
    assert document["chunks"][1] == {
        "index": 1,
        "startByte": TABLE.chunk(1).start_byte,
        "endByteExclusive": TABLE.chunk(1).end_byte_exclusive,
        "bytes": TABLE.chunk(1).bytes,
        "sha256": TABLE.chunk(1).sha256,
        "toolCallId": "call-1",
        "deliveredAt": "2026-12-02T11:22:34.456Z",
    }


def test_attestation_timestamps_are_utc_milliseconds_with_z() -> None:
    plus_five = timezone(timedelta(hours=5, minutes=30))
    completed = datetime(2026, 12, 2, 17, 52, 33, 456789, tzinfo=plus_five)
    document = Attestation.of(complete_coverage(), completed).to_json_dict()
    assert document["completedAt"] == "2026-12-02T12:22:33.456Z"


def test_attestation_bytes_round_trip_is_valid_and_equal() -> None:
    attestation = complete_attestation()
    data = attestation.to_json_bytes()
    assert data.endswith(b"}\n")
    assert json.loads(data) == attestation.to_json_dict()
    assert validate_attestation_bytes(data, BINDING, TABLE) == AttestationValid(attestation)


def test_non_ascii_tool_call_ids_survive_the_round_trip() -> None:
    coverage = Coverage.required(BINDING)
    for index in range(TABLE.chunk_count):
        coverage = coverage.commit(delivery(index, call=f"вызов-{index}-😀"), TABLE)
    attestation = Attestation.of(coverage, COMPLETED_AT)
    data = attestation.to_json_bytes()
    assert data.isascii()
    assert validate_attestation_bytes(data, BINDING, TABLE) == AttestationValid(attestation)
