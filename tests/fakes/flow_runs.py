"""``FlowRunRecords`` in memory: every saved version of each record (``history``), so a test
can see what was written at the start, after each run and at the end; ``calls`` holds the saved
call documents by path."""

from __future__ import annotations

import threading

import attrs

from application.ports import FlowRunRecords
from domain.flows.run_record import FlowRunRecord


@attrs.define
class InMemoryFlowRunRecords:
    root: str = "/squads"
    history: dict[str, list[FlowRunRecord]] = attrs.field(factory=dict)
    calls: dict[str, object] = attrs.field(factory=dict)
    _lock: threading.Lock = attrs.field(factory=threading.Lock)

    def save_call(self, run_id: str, name: str, document: object) -> str:
        path = f"{self.root}/.flow-runs/{run_id}/{name}"
        with self._lock:
            self.calls[path] = document
        return path

    def save(self, record: FlowRunRecord) -> None:
        with self._lock:
            self.history.setdefault(record.run_id, []).append(record)

    def run_ids(self) -> list[str]:
        with self._lock:
            return list(self.history)

    def load(self, run_id: str) -> FlowRunRecord | None:
        with self._lock:
            versions = self.history.get(run_id)
            return versions[-1] if versions else None


_conforms: type[FlowRunRecords] = InMemoryFlowRunRecords
