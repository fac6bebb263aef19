"""``validate_attestation``: every §9 invalidity of the document's shape and identity, each
pinned by its own reason."""

from __future__ import annotations

import attrs
import pytest

from domain.attestation import AttestationValid, validate_attestation
from domain.chunks import ChunkTable
from domain.strict_json import JsonObject
from tests.unit.domain.attestation.support import (
    BINDING,
    OTHER_SHA256,
    SQUAD_ID,
    TABLE,
    TASK_ID,
    attestation_dict,
    complete_attestation,
    multibyte_spec,
)
from tests.unit.domain.attestation.validation_checks import (
    CHUNK_KEYS,
    TOP_KEYS,
    judge,
    mutated,
    reason_of,
)


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
