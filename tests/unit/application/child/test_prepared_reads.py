"""Reads begun at a preflight: taken once by the same call and index, failures raised there."""

from __future__ import annotations

import threading

import pytest

from application.child import prepared_reads
from application.child.prepared_reads import PreparedReads


class Reads:
    def __init__(self) -> None:
        self.indices: list[int] = []
        self._lock = threading.Lock()

    def __call__(self, index: int) -> str:
        with self._lock:
            self.indices.append(index)
        if index < 0:
            raise ValueError(f"no chunk {index}")
        return f"chunk {index}"


def test_the_execution_takes_what_its_preflight_began_once() -> None:
    reads = Reads()
    prepared = PreparedReads(reads)
    prepared.begin("call-1", 3)
    assert prepared.take("call-1", 3) == "chunk 3"
    assert prepared.take("call-1", 3) is None, "a second execution reads for itself"
    assert reads.indices == [3]


def test_another_call_or_another_index_takes_nothing() -> None:
    prepared = PreparedReads(Reads())
    prepared.begin("call-1", 3)
    assert prepared.take("call-2", 3) is None
    assert prepared.take("call-1", 4) is None
    assert prepared.waiting() == 0, "the mismatched read is dropped, never kept for later"


def test_the_read_s_failure_is_raised_by_the_execution() -> None:
    prepared = PreparedReads(Reads())
    prepared.begin("call-1", -1)
    with pytest.raises(ValueError, match="no chunk -1"):
        prepared.take("call-1", -1)


def test_a_second_preflight_of_a_call_begins_a_new_read() -> None:
    reads = Reads()
    prepared = PreparedReads(reads)
    prepared.begin("call-1", 1)
    prepared.begin("call-1", 2)
    assert prepared.take("call-1", 2) == "chunk 2"
    assert prepared.waiting() == 0


def test_reads_never_executed_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prepared_reads, "_MAX_WAITING", 3)
    prepared = PreparedReads(Reads())
    for position in range(5):
        prepared.begin(f"call-{position}", position)
    assert prepared.waiting() == 3
    assert prepared.take("call-0", 0) is None, "the oldest went first"
    assert prepared.take("call-4", 4) == "chunk 4"
