"""Where flow run records are kept (``domain.flows.run_record``): under the squad root, each
record written whole (never half), owner-only, beside the call it re-runs."""

from __future__ import annotations

from typing import Protocol

from domain.flows.run_record import FlowRunRecord

__all__ = ["FlowRunRecords", "UnreadableRunRecord"]


class UnreadableRunRecord(Exception):
    """A run's record is there but cannot be read back (the message says why)."""


class FlowRunRecords(Protocol):
    def save_call(self, run_id: str, name: str, document: object) -> str:
        """Keep a call document (JSON) as the run's file ``name``, owner-only; its path."""
        ...

    def save(self, record: FlowRunRecord) -> None:
        """Replace the run's record atomically: a reader sees the old one or the new one."""
        ...

    def run_ids(self) -> list[str]:
        """The ids of every recorded run, in no particular order."""
        ...

    def load(self, run_id: str) -> FlowRunRecord | None:
        """The run's record; ``None`` when there is none. Raises ``UnreadableRunRecord``."""
        ...
