"""``FlowReport``: what one flow call answers, and its ``--json`` document (content redacted,
capped or withheld as the call says)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from domain.flows.call import FlowCall
from domain.flows.mode_parts import FlowOutcome, FlowStatus
from domain.flows.redact import redact
from domain.flows.runs import capped
from domain.usage import Usage


def error_text(error: Mapping[str, Any]) -> str:
    """``CODE: message``; a skipped run's error has only the message."""
    code = error.get("code")
    return f"{code}: {error['message']}" if code else str(error["message"])


@attrs.frozen
class FlowReport:
    """What a flow call answers: ``document()`` is the CLI's ``--json`` object."""

    flow_id: str
    call: FlowCall
    outcome: FlowOutcome | None = None
    details: dict[str, Any] = attrs.field(factory=dict)
    duration_ms: int = 0
    # The caller's home directory, shown as ``~`` when ``redactSecrets`` holds.
    home: str | None = None

    @property
    def status(self) -> str:
        return str(self.outcome.status) if self.outcome else str(FlowStatus.COMPLETED)

    def usage(self) -> Usage:
        total = Usage()
        for result in self.outcome.results if self.outcome else ():
            total = total.plus(result.usage)
        return total

    def document(self) -> dict[str, Any]:
        results = []
        for result in self.outcome.results if self.outcome else ():
            entry = result.document()
            if not self.call.record_content:
                entry["output"] = None
                # Both carry the child's content; ``contractId`` and the status stay.
                entry.pop("envelope", None)
                entry.pop("handoff", None)
            elif entry["output"] is not None:
                if self.call.redact_secrets:
                    entry["output"] = redact(entry["output"], home=self.home)
                entry["output"], entry["outputTruncated"] = capped(entry["output"])
            if self.call.redact_secrets and "error" in entry:
                entry["error"]["message"] = redact(entry["error"]["message"], home=self.home)
            results.append(entry)
        usage = self.usage()
        return {
            "flowId": self.flow_id,
            "mode": str(self.call.mode),
            "status": self.status,
            "summary": self.outcome.summary if self.outcome else f"Flow {self.call.mode}.",
            "results": results,
            "usage": {
                "input": usage.input_tokens,
                "output": usage.output_tokens,
                "cost": usage.cost,
                "turns": usage.turns,
            },
            "durationMs": self.duration_ms,
            "handoffs": [r.document() for r in self.outcome.handoffs] if self.outcome else [],
            **self.details,
        }
