"""Building the attestation from COMPLETE coverage, and its JSON document."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from domain.attestation import (
    Attestation,
    AttestationValid,
    Coverage,
    CoverageNotComplete,
    validate_attestation_bytes,
)
from tests.unit.domain.attestation.support import (
    BASE_TIME,
    BINDING,
    COMPLETED_AT,
    CONTRACT_HEAD_KEYS,
    LAST,
    SPEC,
    SQUAD_ID,
    TABLE,
    TASK_ID,
    complete_attestation,
    complete_coverage,
    delivery,
)


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
