"""Return envelopes as a child writes them for the flow-engine tests: a valid one for the
test contract (``ID``), and the fenced JSON block a child's answer carries it in."""

from __future__ import annotations

import json
from typing import Any

from domain.flows.contracts import Contract
from tests.unit.domain.flows.test_contracts import contract

ID = Contract.of(contract()).contract_id


def envelope(**changes: Any) -> dict[str, Any]:
    found: dict[str, Any] = {
        "schemaVersion": "pi-flows.return-envelope.v1",
        "contractId": ID,
        "status": "completed",
        "summary": "Found it.",
        "evidence": [{"claim": "the id is s-42", "source": "settings.txt:3"}],
        "artifactReferences": [],
        "digests": [],
        "changedState": [],
        "unresolvedQuestions": [],
        "retry": {"retryable": False},
        "data": {"answer": "s-42"},
    }
    found.update(changes)
    return found


def fenced(value: object) -> str:
    return f"Here is my return.\n\n```json\n{json.dumps(value, indent=1)}\n```\n"
