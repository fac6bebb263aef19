"""The values a coverage is built from: the ``SpecBinding`` of a canonical table, and one
``ChunkDelivery``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import attrs
import pytest

from domain.attestation import SpecBinding
from domain.chunks import CHUNK_BYTES, ChunkTable
from tests.unit.domain.attestation.support import (
    BINDING,
    LARGE_TABLE,
    OTHER_SHA256,
    SPEC,
    SQUAD_ID,
    TABLE,
    TASK_ID,
    boundaries_moved_back,
    delivery,
    multibyte_spec,
)


def test_fixture_specs_are_multibyte_and_multi_chunk() -> None:
    # The tests below only mean something if chunk ends really move off continuation bytes.
    assert TABLE.chunk_count >= 4
    assert LARGE_TABLE.chunk_count >= 12
    assert boundaries_moved_back(TABLE) == TABLE.chunk_count - 1
    assert boundaries_moved_back(LARGE_TABLE) >= 8
    assert len(SPEC.decode()) < len(SPEC)


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
