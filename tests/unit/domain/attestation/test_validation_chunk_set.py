"""``validate_attestation``: every §9 invalidity of the chunk set (gaps, duplicates, order,
offsets, hashes), each pinned by its own reason."""

from __future__ import annotations

import pytest

from domain.strict_json import JsonObject
from tests.unit.domain.attestation.support import LAST, OTHER_SHA256, TABLE
from tests.unit.domain.attestation.validation_checks import mutated, reason_of


def test_empty_chunk_list() -> None:
    def put(d: JsonObject) -> None:
        d["chunks"] = []

    assert reason_of(mutated(put)) == (
        f"attestation.chunks has a gap: missing chunk indices "
        f"{', '.join(str(i) for i in range(TABLE.chunk_count))}"
    )


def test_fewer_than_chunk_count_entries() -> None:
    assert reason_of(mutated(lambda d: d["chunks"].pop())) == (
        f"attestation.chunks has a gap: missing chunk indices {LAST}"
    )


def test_gap_in_indices() -> None:
    assert reason_of(mutated(lambda d: d["chunks"].pop(1))) == (
        "attestation.chunks has a gap: missing chunk indices 1"
    )


def test_duplicate_index() -> None:
    def duplicate(d: JsonObject) -> None:
        d["chunks"].insert(2, dict(d["chunks"][1]))

    assert reason_of(mutated(duplicate)) == "attestation.chunks[2].index 1 is a duplicate index"


def test_duplicate_index_replacing_another() -> None:
    def duplicate(d: JsonObject) -> None:
        d["chunks"][2] = dict(d["chunks"][1])

    assert reason_of(mutated(duplicate)) == "attestation.chunks[2].index 1 is a duplicate index"


def test_not_ascending() -> None:
    def swap(d: JsonObject) -> None:
        chunks = d["chunks"]
        chunks[1], chunks[2] = chunks[2], chunks[1]

    assert reason_of(mutated(swap)) == (
        "attestation.chunks[2].index 1 is not in ascending index order"
    )


def test_reversed_order_is_invalid_on_disk() -> None:
    assert reason_of(mutated(lambda d: d["chunks"].reverse())) == (
        f"attestation.chunks[1].index {LAST - 1} is not in ascending index order"
    )


def test_more_than_chunk_count_entries() -> None:
    def extra(d: JsonObject) -> None:
        d["chunks"].append(dict(d["chunks"][-1], index=TABLE.chunk_count))

    assert reason_of(mutated(extra)) == (
        f"attestation.chunks[{TABLE.chunk_count}].index {TABLE.chunk_count} is out of range "
        f"0..{LAST}"
    )


def shift_boundary(d: JsonObject, after: int, by: int) -> None:
    """Move the end of chunk ``after`` and the start of the next by ``by`` bytes, keeping
    lengths consistent, so the set stays contiguous but no longer canonical."""
    left, right = d["chunks"][after], d["chunks"][after + 1]
    left["endByteExclusive"] += by
    left["bytes"] += by
    right["startByte"] += by
    right["bytes"] -= by


@pytest.mark.parametrize(
    ("shift", "reason"),
    [
        (-1, "overlaps the previous chunk: startByte {start} < previous endByteExclusive {end}"),
        (1, "leaves a byte gap: startByte {start} > previous endByteExclusive {end}"),
    ],
    ids=["overlap", "byte gap"],
)
def test_chunk_not_starting_where_the_previous_ends(shift: int, reason: str) -> None:
    def move_start(d: JsonObject) -> None:
        d["chunks"][2]["startByte"] += shift
        d["chunks"][2]["bytes"] -= shift

    end = TABLE.chunk(1).end_byte_exclusive
    expected = reason.format(start=end + shift, end=end)
    assert reason_of(mutated(move_start)) == f"attestation.chunks[2] {expected}"


def test_first_chunk_not_at_byte_zero() -> None:
    def late_start(d: JsonObject) -> None:
        d["chunks"][0]["startByte"] = 1
        d["chunks"][0]["bytes"] -= 1

    assert reason_of(mutated(late_start)).startswith(
        "attestation.chunks[0] leaves a byte gap: startByte 1 > previous endByteExclusive 0"
    )


@pytest.mark.parametrize("by", [-1, 1, -5])
def test_contiguous_but_wrong_offsets(by: int) -> None:
    canonical = TABLE.chunk(0).end_byte_exclusive
    assert reason_of(mutated(lambda d: shift_boundary(d, 0, by))) == (
        "attestation.chunks[0] does not match the canonical spec: chunk 0: endByteExclusive "
        f"{canonical + by} is not canonical {canonical}"
    )


def test_wrong_last_end() -> None:
    def short(d: JsonObject) -> None:
        d["chunks"][-1]["endByteExclusive"] -= 1
        d["chunks"][-1]["bytes"] -= 1

    assert reason_of(mutated(short)).startswith(
        f"attestation.chunks[{LAST}] does not match the canonical spec: "
        f"chunk {LAST}: endByteExclusive"
    )


@pytest.mark.parametrize("index", range(TABLE.chunk_count))
def test_wrong_sha(index: int) -> None:
    def tamper(d: JsonObject) -> None:
        d["chunks"][index]["sha256"] = OTHER_SHA256

    assert reason_of(mutated(tamper)) == (
        f"attestation.chunks[{index}] does not match the canonical spec: "
        f"chunk {index}: sha256 is not the canonical chunk hash"
    )


def test_sha_of_another_chunk() -> None:
    def tamper(d: JsonObject) -> None:
        d["chunks"][1]["sha256"] = TABLE.chunk(2).sha256

    assert reason_of(mutated(tamper)).endswith("chunk 1: sha256 is not the canonical chunk hash")
