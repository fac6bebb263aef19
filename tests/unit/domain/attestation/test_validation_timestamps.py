"""``validate_attestation``: the timestamps a document may carry, and the bytes entry point."""

from __future__ import annotations

import json
from typing import Any

import pytest

from domain.attestation import (
    Attestation,
    AttestationValid,
    SpecBinding,
    validate_attestation,
    validate_attestation_bytes,
)
from domain.chunks import ChunkTable
from domain.strict_json import JsonObject
from tests.unit.domain.attestation import support
from tests.unit.domain.attestation.support import BINDING, LAST, TABLE, attestation_dict
from tests.unit.domain.attestation.validation_checks import judge, mutated, reason_of

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


def document_bytes(document: Any) -> bytes:
    return json.dumps(document).encode()


def test_bytes_entry_point_accepts_a_valid_file() -> None:
    verdict = validate_attestation_bytes(document_bytes(attestation_dict()), BINDING, TABLE)
    assert isinstance(verdict, AttestationValid)
    assert verdict.attestation == support.complete_attestation()


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
    other_spec = support.multibyte_spec(100_000, seed=99)
    other_table = ChunkTable.of(other_spec)
    other_binding = SpecBinding.of(other_table, squad_id=support.SQUAD_ID, task_id=support.TASK_ID)
    verdict = validate_attestation(attestation_dict(), other_binding, other_table)
    assert reason_of(verdict) == "attestation.specSha256 is not the bound specSha256"
