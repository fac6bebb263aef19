"""``validate_attestation``: every §9 invalidity, each pinned by its own reason."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import attrs
import pytest

from domain.attestation import (
    Attestation,
    AttestationInvalid,
    AttestationValid,
    AttestationVerdict,
    SpecBinding,
    validate_attestation,
    validate_attestation_bytes,
)
from domain.chunks import ChunkTable
from domain.strict_json import JsonObject
from tests.unit.domain.attestation_support import (
    BINDING,
    OTHER_SHA256,
    SQUAD_ID,
    TABLE,
    TASK_ID,
    attestation_dict,
    complete_attestation,
    multibyte_spec,
)

TOP_KEYS = list(attestation_dict())
CHUNK_KEYS = list(attestation_dict()["chunks"][0])
LAST = TABLE.chunk_count - 1


def reason_of(verdict: AttestationVerdict) -> str:
    assert isinstance(verdict, AttestationInvalid), "expected an invalid verdict"
    return verdict.reason


def judge(document: object) -> AttestationVerdict:
    return validate_attestation(document, BINDING, TABLE)


def mutated(mutate: Callable[[JsonObject], object]) -> AttestationVerdict:
    document = attestation_dict()
    mutate(document)
    return judge(document)


def test_a_valid_document_is_accepted_with_its_value() -> None:
    verdict = judge(attestation_dict())
    assert verdict == AttestationValid(complete_attestation())
    assert verdict.valid


def test_reasons_never_quote_strings_from_the_file() -> None:
    secret = "SPEC-CONTENT-Пример"
    for key in ("squadId", "taskId", "state"):
        document = attestation_dict()
        document[key] = secret
        assert secret not in reason_of(judge(document))
    document = attestation_dict()
    document[secret] = 1
    assert "Пример" not in reason_of(judge(document))


# -- top-level shape --------------------------------------------------------------------------


@pytest.mark.parametrize("raw", [[], "attestation", 1, None, True, 1.5])
def test_not_an_object(raw: object) -> None:
    assert reason_of(judge(raw)).startswith("attestation must be a JSON object")


@pytest.mark.parametrize("key", TOP_KEYS)
def test_missing_top_level_key(key: str) -> None:
    assert reason_of(mutated(lambda d: d.pop(key))) == f"attestation is missing '{key}'"


def test_unknown_top_level_key() -> None:
    def add(d: JsonObject) -> None:
        d["extra"] = 1

    # An unknown key is file content: it is counted, never quoted.
    assert reason_of(mutated(add)) == "attestation has unknown (a key not shown)"


def test_top_level_key_order_is_not_a_validity_rule() -> None:
    document = attestation_dict()
    reordered = {key: document[key] for key in reversed(list(document))}
    assert judge(reordered).valid


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("version", True, "attestation.version must be an integer, not boolean"),
        ("version", 1.0, "attestation.version must be an integer, not number"),
        ("version", "1", "attestation.version must be an integer, not string"),
        ("version", 2, "attestation.version must be 1, got 2"),
        ("version", 0, "attestation.version must be 1, got 0"),
        ("state", "COMPLETE", "attestation.state must be 'complete'"),
        ("state", "reading", "attestation.state must be 'complete'"),
        ("state", None, "attestation.state must be a string, not null"),
        ("squadId", 7, "attestation.squadId must be a string, not number"),
        ("taskId", None, "attestation.taskId must be a string, not null"),
        ("specSha256", 5, "attestation.specSha256 must be a string, not number"),
        ("specSha256", TABLE.spec_sha256.upper(), "attestation.specSha256 must be 64 lowercase"),
        ("specBytes", True, "attestation.specBytes must be an integer, not boolean"),
        ("specBytes", float(TABLE.spec_bytes), "attestation.specBytes must be an integer"),
        ("specBytes", -1, "attestation.specBytes must be 1..2^53-1, got -1"),
        ("chunkBytes", "32768", "attestation.chunkBytes must be an integer, not string"),
        ("chunkCount", True, "attestation.chunkCount must be an integer, not boolean"),
        ("chunkCount", 2**64, "attestation.chunkCount must be 1..2^53-1, got out of range"),
        ("chunks", {}, "attestation.chunks must be an array, not object"),
        ("chunks", None, "attestation.chunks must be an array, not null"),
        ("completedAt", None, "attestation.completedAt is not a string"),
        ("completedAt", 1700000000, "attestation.completedAt is not a string"),
    ],
)
def test_wrong_top_level_types_and_values(key: str, value: object, reason: str) -> None:
    def put(d: JsonObject) -> None:
        d[key] = value

    assert reason_of(mutated(put)).startswith(reason)


# -- identity ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("squadId", "squad-beta", f"attestation.squadId is not the bound squad '{SQUAD_ID}'"),
        ("taskId", "task-8", f"attestation.taskId is not the bound task '{TASK_ID}'"),
        ("specSha256", OTHER_SHA256, "attestation.specSha256 is not the bound specSha256"),
        (
            "specBytes",
            TABLE.spec_bytes + 1,
            f"attestation.specBytes {TABLE.spec_bytes + 1} is not the bound {TABLE.spec_bytes}",
        ),
        (
            "chunkCount",
            TABLE.chunk_count + 1,
            f"attestation.chunkCount {TABLE.chunk_count + 1} is not the bound {TABLE.chunk_count}",
        ),
        ("chunkBytes", 16384, "attestation: chunkBytes must be 32768 in v1, got 16384"),
        ("squadId", "Squad Beta", "attestation: squad ID does not match its pattern"),
    ],
)
def test_identity_mismatch(key: str, value: object, reason: str) -> None:
    def put(d: JsonObject) -> None:
        d[key] = value

    assert reason_of(mutated(put)) == reason


def test_binding_that_is_not_the_canonical_table() -> None:
    other = ChunkTable.of(multibyte_spec(100_000, seed=99))
    verdict = validate_attestation(attestation_dict(), BINDING, other)
    assert reason_of(verdict) == (
        "canonical spec does not match the binding: "
        "canonical specSha256 differs from the bound specSha256"
    )


def test_attestation_of_another_task_is_invalid_for_this_one() -> None:
    other_task = attrs.evolve(BINDING, task_id="task-8")
    verdict = validate_attestation(attestation_dict(), other_task, TABLE)
    assert reason_of(verdict) == "attestation.taskId is not the bound task 'task-8'"


# -- chunk shape ------------------------------------------------------------------------------


@pytest.mark.parametrize("key", CHUNK_KEYS)
def test_missing_chunk_key(key: str) -> None:
    assert reason_of(mutated(lambda d: d["chunks"][2].pop(key))) == (
        f"attestation.chunks[2] is missing '{key}'"
    )


def test_unknown_chunk_key() -> None:
    def add(d: JsonObject) -> None:
        d["chunks"][1]["text"] = "…"

    assert reason_of(mutated(add)) == "attestation.chunks[1] has unknown (a key not shown)"


def test_unknown_key_from_the_other_file_is_named() -> None:
    def add(d: JsonObject) -> None:
        d["deliveries"] = []

    assert reason_of(mutated(add)) == "attestation has unknown 'deliveries'"


@pytest.mark.parametrize("entry", [[], "chunk", 3, None])
def test_chunk_entry_not_an_object(entry: object) -> None:
    def put(d: JsonObject) -> None:
        d["chunks"][0] = entry

    assert reason_of(mutated(put)).startswith("attestation.chunks[0] must be a JSON object")


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("index", True, "attestation.chunks[1].index must be an integer, not boolean"),
        ("index", 1.0, "attestation.chunks[1].index must be an integer, not number"),
        ("index", -1, "attestation.chunks[1].index must be 0..2^53-1, got -1"),
        ("startByte", "0", "attestation.chunks[1].startByte must be an integer, not string"),
        (
            "endByteExclusive",
            False,
            "attestation.chunks[1].endByteExclusive must be an integer, not boolean",
        ),
        ("bytes", None, "attestation.chunks[1].bytes must be an integer, not null"),
        ("bytes", 0, "attestation.chunks[1].bytes must be 1..2^53-1, got 0"),
        ("sha256", 123, "attestation.chunks[1].sha256 must be a string, not number"),
        ("sha256", "ab", "attestation.chunks[1].sha256 must be 64 lowercase hex digits"),
        ("toolCallId", 5, "attestation.chunks[1].toolCallId must be a string, not number"),
        ("toolCallId", "", "attestation.chunks[1].toolCallId must not be empty"),
        ("toolCallId", None, "attestation.chunks[1].toolCallId must be a string, not null"),
        ("deliveredAt", 1234, "attestation.chunks[1].deliveredAt is not a string"),
    ],
)
def test_wrong_chunk_types_and_values(key: str, value: object, reason: str) -> None:
    def put(d: JsonObject) -> None:
        d["chunks"][1][key] = value

    assert reason_of(mutated(put)) == reason


def test_chunk_length_must_match_offsets() -> None:
    def put(d: JsonObject) -> None:
        d["chunks"][1]["bytes"] += 1

    chunk = TABLE.chunk(1)
    assert reason_of(mutated(put)) == (
        f"attestation.chunks[1].bytes {chunk.bytes + 1} is not endByteExclusive - startByte "
        f"({chunk.end_byte_exclusive} - {chunk.start_byte})"
    )


def test_empty_or_reversed_chunk() -> None:
    def put(d: JsonObject) -> None:
        d["chunks"][1]["endByteExclusive"] = d["chunks"][1]["startByte"]

    assert "is empty or reversed" in reason_of(mutated(put))


# -- chunk set --------------------------------------------------------------------------------


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


# -- timestamps -------------------------------------------------------------------------------


INVALID_TIMESTAMPS = [
    ("2026-12-02T11:22:33.456", "is not an RFC 3339 date-time"),
    ("2026-12-02 11:22:33.456Z", "is not an RFC 3339 date-time"),
    ("2026-02-30T11:22:33Z", "is not a valid calendar date-time"),
    ("2026-12-02T24:00:00Z", "is not a valid calendar date-time"),
    ("2026-12-02T11:60:00Z", "is not a valid calendar date-time"),
    ("2026-12-31T23:59:60Z", "is a leap second"),
    ("2026-12-02T11:22:33+24:00", "has an offset outside"),
    ("2026-12-02", "is not an RFC 3339 date-time"),
    ("", "is not an RFC 3339 date-time"),
]


@pytest.mark.parametrize(("text", "reason"), INVALID_TIMESTAMPS)
def test_invalid_delivered_at(text: str, reason: str) -> None:
    def put(d: JsonObject) -> None:
        d["chunks"][1]["deliveredAt"] = text

    assert reason_of(mutated(put)).startswith(f"attestation.chunks[1].deliveredAt {reason}")


@pytest.mark.parametrize(("text", "reason"), INVALID_TIMESTAMPS)
def test_invalid_completed_at(text: str, reason: str) -> None:
    def put(d: JsonObject) -> None:
        d["completedAt"] = text

    assert reason_of(mutated(put)).startswith(f"attestation.completedAt {reason}")


@pytest.mark.parametrize(
    "text",
    [
        "2026-12-02T12:22:33.456Z",
        "2026-12-02t12:22:33.456z",
        "2026-12-02T12:22:33Z",
        "2026-12-02T12:22:33.456789123Z",
        "2026-12-02T14:22:33.456+02:00",
        "2026-12-02T07:52:33.456-04:30",
        "2026-12-02T12:22:33.456-00:00",
    ],
)
def test_general_rfc3339_is_accepted(text: str) -> None:
    def put(d: JsonObject) -> None:
        d["completedAt"] = text

    assert mutated(put).valid


def test_completed_before_the_latest_delivery_is_invalid() -> None:
    def early(d: JsonObject) -> None:
        d["completedAt"] = "2026-12-02T11:22:34.000Z"  # after chunk 0, before the others

    assert reason_of(mutated(early)) == (
        f"attestation.completedAt is earlier than chunks[{LAST}].deliveredAt"
    )


def test_completed_exactly_at_the_latest_delivery_is_valid() -> None:
    def same(d: JsonObject) -> None:
        d["completedAt"] = d["chunks"][LAST]["deliveredAt"]

    assert mutated(same).valid


def test_completion_order_uses_the_full_written_precision() -> None:
    # Both floor to the same millisecond; the text still says completion came first.
    def sub_millisecond(d: JsonObject) -> None:
        d["chunks"][LAST]["deliveredAt"] = "2026-12-02T12:00:00.0009Z"
        d["completedAt"] = "2026-12-02T12:00:00.00089Z"

    assert reason_of(mutated(sub_millisecond)) == (
        f"attestation.completedAt is earlier than chunks[{LAST}].deliveredAt"
    )


def test_completion_order_compares_instants_across_offsets() -> None:
    def offset(d: JsonObject) -> None:
        # 13:22:33+02:00 is 11:22:33Z: before chunk 1 was delivered (11:22:34.456Z).
        d["completedAt"] = "2026-12-02T13:22:33.000+02:00"

    assert "completedAt is earlier than" in reason_of(mutated(offset))


# -- bytes entry point ------------------------------------------------------------------------


def document_bytes(document: Any) -> bytes:
    return json.dumps(document).encode()


def test_bytes_entry_point_accepts_a_valid_file() -> None:
    verdict = validate_attestation_bytes(document_bytes(attestation_dict()), BINDING, TABLE)
    assert isinstance(verdict, AttestationValid)
    assert verdict.attestation == complete_attestation()


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "attestation is not strict JSON"),
        (b"\xef\xbb\xbf{}", "attestation is not strict JSON: starts with a UTF-8 byte-order mark"),
        (b'{"version": 1, "version": 1}', "attestation is not strict JSON: duplicate object key"),
        (b'{"version": NaN}', "attestation is not strict JSON: non-finite number NaN"),
        (b"{} x", "attestation is not strict JSON"),
        (b"[1]", "attestation must be a JSON object, not array"),
    ],
)
def test_bytes_entry_point_rejects_non_strict_json(data: bytes, reason: str) -> None:
    assert reason_of(validate_attestation_bytes(data, BINDING, TABLE)).startswith(reason)


def test_duplicate_key_inside_a_chunk_is_rejected() -> None:
    text = json.dumps(attestation_dict())
    tampered = text.replace('"toolCallId": "call-0"', '"toolCallId": "call-0", "toolCallId": "x"')
    assert tampered != text
    verdict = validate_attestation_bytes(tampered.encode(), BINDING, TABLE)
    assert reason_of(verdict) == (
        "attestation is not strict JSON: duplicate object key 'toolCallId'"
    )


def test_verdict_types() -> None:
    valid = judge(attestation_dict())
    invalid = judge([])
    assert isinstance(valid, AttestationValid)
    assert isinstance(valid.attestation, Attestation)
    assert valid.valid is True
    assert invalid.valid is False


def test_binding_is_compared_not_migrated() -> None:
    # A document that is valid for its own binding says nothing about another spec.
    other_spec = multibyte_spec(100_000, seed=99)
    other_table = ChunkTable.of(other_spec)
    other_binding = SpecBinding.of(other_table, squad_id=SQUAD_ID, task_id=TASK_ID)
    verdict = validate_attestation(attestation_dict(), other_binding, other_table)
    assert reason_of(verdict) == "attestation.specSha256 is not the bound specSha256"
