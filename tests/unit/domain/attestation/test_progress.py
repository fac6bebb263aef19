"""The durable progress file: round trips, corrupt shapes, and INVALID-not-corrupt cases."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.attestation import (
    Coverage,
    CoverageState,
    ProgressCorrupt,
    parse_progress,
    progress_json_dict,
    serialise_progress,
)
from domain.attestation.progress import _indented
from domain.chunks import ChunkTable
from domain.strict_json import JsonObject
from tests.unit.domain.attestation.support import (
    BASE_TIME,
    BINDING,
    CONTRACT_HEAD_KEYS,
    OTHER_SHA256,
    TABLE,
    commit_all,
    complete_coverage,
    delivery,
    multibyte_spec,
)

LAST = TABLE.chunk_count - 1
READING = commit_all([0, 2])


def load(data: bytes) -> Coverage:
    return parse_progress(data, BINDING, TABLE)


def encode(document: Any) -> bytes:
    return json.dumps(document).encode()


def progress_dict(coverage: Coverage = READING) -> JsonObject:
    return json.loads(serialise_progress(coverage))  # type: ignore[no-any-return]


def corrupt_reason(mutate: Callable[[JsonObject], object], coverage: Coverage = READING) -> str:
    document = progress_dict(coverage)
    mutate(document)
    with pytest.raises(ProgressCorrupt) as caught:
        load(encode(document))
    return caught.value.reason


# -- format and round trips -------------------------------------------------------------------


def test_progress_keys_in_order() -> None:
    document = progress_json_dict(READING)
    assert list(document) == [*CONTRACT_HEAD_KEYS, "deliveries", "invalidReason"]
    assert document["version"] == 1
    assert document["state"] == "reading"
    assert document["invalidReason"] is None
    assert [d["index"] for d in document["deliveries"]] == [0, 2]
    assert document["deliveries"][1]["deliveredAt"] == "2026-12-02T11:22:35.456Z"


@pytest.mark.parametrize(
    "coverage",
    [
        Coverage.required(BINDING),
        READING,
        commit_all(list(reversed(range(TABLE.chunk_count)))),
        commit_all([1]).invalidate("conflicting record for chunk 1: sha256 differs"),
    ],
    ids=["required", "reading", "complete", "invalid"],
)
def test_round_trip(coverage: Coverage) -> None:
    data = serialise_progress(coverage)
    assert data.isascii()
    assert data.endswith(b"}\n")
    assert load(data) == coverage
    # The layout is json's indent=2, byte for byte (other tools edit these files as text).
    reference = json.dumps(progress_json_dict(coverage), indent=2, ensure_ascii=True) + "\n"
    assert data == reference.encode("ascii")


def test_every_commit_of_a_full_read_is_written_as_json_writes_it() -> None:
    # Each delivery's rendering is remembered across commits (serialise_progress): every file of
    # a read in any order, and a record re-delivered with another call id or time, must still be
    # json's own layout of exactly this coverage.
    coverage = Coverage.required(BINDING)
    for index in [*reversed(range(TABLE.chunk_count)), 0]:
        again = delivery(index, call="again", at=BASE_TIME + timedelta(hours=1))
        step = delivery(index) if coverage.state is not CoverageState.COMPLETE else again
        coverage = coverage.commit(step, TABLE)
        reference = json.dumps(progress_json_dict(coverage), indent=2, ensure_ascii=True) + "\n"
        assert serialise_progress(coverage) == reference.encode("ascii")
        assert load(serialise_progress(coverage)) == coverage


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_JSON_VALUES)
def test_the_indented_writer_is_json_indent_2(value: object) -> None:
    assert _indented(value, "") == json.dumps(value, indent=2, ensure_ascii=True)


def test_round_trip_of_sub_millisecond_times_is_exact() -> None:
    # Values are held at the precision the file stores, so nothing shifts across a restart.
    coverage = Coverage.required(BINDING).commit(
        delivery(0, at=BASE_TIME + timedelta(microseconds=789)), TABLE
    )
    assert load(serialise_progress(coverage)) == coverage


def test_complete_progress_is_re_proved_on_load() -> None:
    loaded = load(serialise_progress(complete_coverage()))
    assert loaded.state is CoverageState.COMPLETE
    assert loaded == complete_coverage()


def test_loaded_progress_resumes_where_it_stopped() -> None:
    loaded = load(serialise_progress(READING))
    assert loaded.missing_indices() == tuple(i for i in range(TABLE.chunk_count) if i not in (0, 2))
    for index in loaded.missing_indices():
        loaded = loaded.commit(delivery(index), TABLE)
    assert loaded == complete_coverage()


# -- identity and canonical mismatches: INVALID, never migrated -------------------------------


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("squadId", "squad-beta", "squadId is not the bound squad 'squad-alpha'"),
        ("taskId", "task-8", "taskId is not the bound task 'task-7'"),
        ("specSha256", OTHER_SHA256, "specSha256 is not the bound specSha256"),
    ],
)
def test_progress_bound_elsewhere_is_invalid(key: str, value: object, reason: str) -> None:
    document = progress_dict()
    document[key] = value
    loaded = load(encode(document))
    assert loaded.state is CoverageState.INVALID
    assert loaded.binding == BINDING
    assert loaded.deliveries == ()
    assert loaded.invalid_reason == f"progress is bound elsewhere: {reason}"


def test_progress_of_a_different_spec_identity_is_invalid() -> None:
    other_table = ChunkTable.of(multibyte_spec(160_000, seed=5))
    other = Coverage.required(
        attrs.evolve(
            BINDING,
            spec_sha256=other_table.spec_sha256,
            spec_bytes=other_table.spec_bytes,
            chunk_count=other_table.chunk_count,
        )
    )
    loaded = load(serialise_progress(other))
    assert loaded.state is CoverageState.INVALID
    assert (
        loaded.invalid_reason
        == "progress is bound elsewhere: specSha256 is not the bound specSha256"
    )


def test_tampered_recorded_hash_is_invalid_not_corrupt() -> None:
    document = progress_dict()
    document["deliveries"][1]["sha256"] = OTHER_SHA256
    loaded = load(encode(document))
    assert loaded.state is CoverageState.INVALID
    assert loaded.invalid_reason == (
        "recorded delivery is not canonical: chunk 2: sha256 is not the canonical chunk hash"
    )


def test_tampered_complete_progress_is_invalid() -> None:
    document = progress_dict(complete_coverage())
    document["deliveries"][LAST]["sha256"] = OTHER_SHA256
    assert load(encode(document)).state is CoverageState.INVALID


def test_canonical_file_changed_since_progress_was_written() -> None:
    other = ChunkTable.of(multibyte_spec(100_000, seed=99))
    loaded = parse_progress(serialise_progress(READING), BINDING, other)
    assert loaded.state is CoverageState.INVALID
    assert loaded.invalid_reason == "canonical specSha256 differs from the bound specSha256"


def test_stored_invalid_stays_invalid_with_its_reason() -> None:
    invalid = READING.invalidate("conflicting record for chunk 2: sha256 differs")
    loaded = load(serialise_progress(invalid))
    assert loaded.state is CoverageState.INVALID
    assert loaded.invalid_reason == "conflicting record for chunk 2: sha256 differs"
    assert loaded.commit(delivery(1), TABLE) is loaded


# -- corrupt: raised, so the application may move the file aside and reset ---------------------


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "progress is not strict JSON"),
        (b"\xef\xbb\xbf{}", "progress is not strict JSON: starts with a UTF-8 byte-order mark"),
        (b"\xff", "progress is not strict JSON: invalid UTF-8 at byte offset 0"),
        (b'{"state": 1, "state": 2}', "progress is not strict JSON: duplicate object key 'state'"),
        (b"[]", "progress must be a JSON object, not array"),
        (b"null", "progress must be a JSON object, not null"),
    ],
)
def test_not_a_progress_document(data: bytes, reason: str) -> None:
    with pytest.raises(ProgressCorrupt) as caught:
        load(data)
    assert caught.value.reason.startswith(reason)


@pytest.mark.parametrize("key", list(progress_json_dict(READING)))
def test_missing_key(key: str) -> None:
    assert corrupt_reason(lambda d: d.pop(key)) == f"progress is missing '{key}'"


def test_unknown_key() -> None:
    def add(d: JsonObject) -> None:
        d["note"] = "x"

    assert corrupt_reason(add) == "progress has unknown (a key not shown)"


def set_to(key: str, value: object) -> Callable[[JsonObject], None]:
    def put(d: JsonObject) -> None:
        d[key] = value

    return put


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (set_to("version", 2), "progress.version must be 1, got 2"),
        (set_to("version", True), "progress.version must be an integer, not boolean"),
        (set_to("state", "not_required"), "progress.state must be one of required, reading"),
        (set_to("state", "READING"), "progress.state must be one of"),
        (set_to("state", None), "progress.state must be a string, not null"),
        (set_to("specBytes", True), "progress.specBytes must be an integer, not boolean"),
        (set_to("chunkBytes", 4096), "progress: chunkBytes must be 32768 in v1, got 4096"),
        (set_to("squadId", "Not An Id"), "progress: squad ID does not match its pattern"),
        (set_to("deliveries", {}), "progress.deliveries must be an array, not object"),
        (set_to("invalidReason", "why"), "progress.invalidReason must be null unless"),
        (set_to("state", "required"), "progress is inconsistent: state required cannot hold 2"),
        (set_to("state", "complete"), "progress is inconsistent: state complete cannot hold 2"),
        (
            lambda d: d["deliveries"][0].pop("toolCallId"),
            "progress.deliveries[0] is missing 'toolCallId'",
        ),
        (
            lambda d: d["deliveries"][1].update(deliveredAt="2026-02-30T00:00:00Z"),
            "progress.deliveries[1].deliveredAt is not a valid calendar date-time",
        ),
        (
            lambda d: d["deliveries"][1].update(bytes=1),
            "progress.deliveries[1].bytes 1 is not endByteExclusive - startByte",
        ),
        (
            lambda d: d["deliveries"].reverse(),
            "progress.deliveries[1] is not in strictly ascending index order",
        ),
        (
            lambda d: d["deliveries"].append(dict(d["deliveries"][1])),
            "progress.deliveries[2] is not in strictly ascending index order",
        ),
        (
            lambda d: d["deliveries"][1].update(index=TABLE.chunk_count),
            f"progress is inconsistent: chunk index {TABLE.chunk_count} is out of range",
        ),
        (
            lambda d: d["deliveries"][1].update(index=1),
            "progress is inconsistent: chunks 0 and 1 are not contiguous",
        ),
    ],
)
def test_corrupt_shapes(mutate: Callable[[JsonObject], object], reason: str) -> None:
    assert corrupt_reason(mutate).startswith(reason)


def test_reading_with_no_deliveries_is_corrupt() -> None:
    def empty(d: JsonObject) -> None:
        d["deliveries"] = []

    assert (
        corrupt_reason(empty) == "progress is inconsistent: state reading cannot hold 0 of 4 chunks"
    )


def test_reading_with_every_chunk_is_corrupt() -> None:
    def claim_reading(d: JsonObject) -> None:
        d["state"] = "reading"

    reason = corrupt_reason(claim_reading, complete_coverage())
    assert (
        reason
        == f"progress is inconsistent: state reading cannot hold {LAST + 1} of {LAST + 1} chunks"
    )


@pytest.mark.parametrize("reason", [None, "", "Конфликт", "x" * 1025, 7])
def test_invalid_state_needs_a_printable_ascii_reason(reason: object) -> None:
    def put(d: JsonObject) -> None:
        d["state"] = "invalid"
        d["invalidReason"] = reason

    assert corrupt_reason(put) == (
        "progress.invalidReason must be 1..1024 printable ASCII characters"
    )
