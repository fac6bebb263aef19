"""``spec_task_ids`` is cached by the digest of the verified bytes, never across contents."""

from __future__ import annotations

import json

import pytest

from application import attestation_check
from application.attestation_check import spec_task_ids
from application.canonical import CanonicalSpec
from domain.chunks import ChunkTable


def canonical(task_ids: list[str]) -> CanonicalSpec:
    data = json.dumps({"tasks": [{"id": task_id} for task_id in task_ids]}).encode()
    return CanonicalSpec(data=data, table=ChunkTable.of(data))


def test_each_content_has_its_own_task_ids() -> None:
    assert spec_task_ids(canonical(["a", "b"])) == ("a", "b")
    assert spec_task_ids(canonical(["a", "c"])) == ("a", "c")
    assert spec_task_ids(canonical(["a", "b"])) == ("a", "b")


def test_a_fresh_read_of_the_same_bytes_is_decoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    decoded: list[bytes] = []
    original = attestation_check._task_ids_of

    def counting(data: bytes) -> tuple[str, ...]:
        decoded.append(data)
        return original(data)

    monkeypatch.setattr(attestation_check, "_task_ids_of", counting)
    monkeypatch.setattr(attestation_check, "_TASK_IDS", {})
    first, again = canonical(["x", "y"]), canonical(["x", "y"])
    assert first.data is not again.data
    assert spec_task_ids(first) == spec_task_ids(again) == ("x", "y")
    assert len(decoded) == 1
    assert spec_task_ids(canonical(["x", "z"])) == ("x", "z")
    assert len(decoded) == 2
