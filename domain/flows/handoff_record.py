"""What the handoff policy did at one boundary (``HandoffRecord``, ``HandoffAction``), and the
flow summary's count of them. A run's job carries the records of the handoffs its prompt
carries; the guard that makes them is ``domain.flows.handoff``'s."""

from __future__ import annotations

import enum
from typing import Any

import attrs

from domain.flows.handoff_envelope import HandoffFacts
from domain.flows.handoff_policy import HandoffPolicy


class HandoffAction(enum.StrEnum):
    # Nothing flagged: the cleaned payload crossed, fenced.
    PASSED = "passed"
    # Flagged under warn: the payload crossed under a notice.
    NOTICE = "notice"
    # Flagged under quarantine: a fixed marker crossed, the payload did not.
    QUARANTINED = "quarantined"
    # Flagged under fail: nothing crossed; the recipient was not spawned.
    FAILED = "failed"
    # A final answer the caller reads (not another agent): scanned and recorded, never
    # enforced (pi-flows: a terminal report is not a handoff).
    EXEMPT = "exempt"


@attrs.frozen
class HandoffRecord:
    """What the policy did at one boundary: ``source`` handed to ``target`` (a run key, or
    ``caller`` for an exempt final answer). Never the payload."""

    source: str
    target: str
    policy: HandoffPolicy
    action: HandoffAction
    markers: tuple[str, ...] = ()
    compositional: tuple[str, ...] = ()
    stripped: int = 0
    redactions: int = 0
    raw_bytes: int = 0
    carried_bytes: int = 0
    # The envelope that was (or would have been) handed on: for the trace's handoff events.
    facts: HandoffFacts | None = None

    @property
    def crossed(self) -> bool:
        """Whether the payload itself crossed (passed, or under a notice)."""
        return self.action in (HandoffAction.PASSED, HandoffAction.NOTICE)

    def document(self) -> dict[str, Any]:
        return {
            "from": self.source,
            "to": self.target,
            "policy": str(self.policy),
            "action": str(self.action),
            "markers": list(self.markers),
            "compositional": list(self.compositional),
            "strippedCodePoints": self.stripped,
            "redactions": self.redactions,
            "rawBytes": self.raw_bytes,
            "carriedBytes": self.carried_bytes,
        }

    def line(self) -> str:
        found = [*self.markers, *(f"{m} (compositional)" for m in self.compositional)]
        return f"handoff {self.source} → {self.target}: {self.action} ({', '.join(found)})"


def summary(records: tuple[HandoffRecord, ...]) -> str:
    """`` Handoffs: 1 notice, 1 quarantined.`` for a flow summary; empty when none was
    flagged between agents."""
    counts: dict[HandoffAction, int] = {}
    for record in records:
        if record.action in (HandoffAction.NOTICE, HandoffAction.QUARANTINED, HandoffAction.FAILED):
            counts[record.action] = counts.get(record.action, 0) + 1
    if not counts:
        return ""
    return " Handoffs: " + ", ".join(f"{n} {action}" for action, n in counts.items()) + "."
