"""The ``envelope`` policy: a contracted flow child that answers with a
``pi-flows.return-envelope.v1`` in a fenced ``json`` block, as the return protocol asks.

It echoes the contract identity its prompt names (``Set contractId to exactly "sha256:…"``;
none when the prompt names none) and returns as ``data`` the JSON of the
``scripted-envelope-data: {…}`` marker line (``{}`` without one), so a test chooses data that
passes or violates the contract's ``returnSchema``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from adapters.scripted_model.conversation import Conversation
from adapters.scripted_model.replies import PolicyState, Reply

ENVELOPE_DATA_MARKER = "scripted-envelope-data"
_CONTRACT_ID = re.compile(r'Set contractId to exactly "(sha256:[0-9a-f]{64})"')


def envelope(conversation: Conversation, state: PolicyState) -> Reply:
    prompt = conversation.last_user_text()
    named = _CONTRACT_ID.search(prompt)
    marker = conversation.marker(ENVELOPE_DATA_MARKER)
    body: dict[str, Any] = {"schemaVersion": "pi-flows.return-envelope.v1"}
    if named is not None:
        body["contractId"] = named.group(1)
    body.update(
        status="completed",
        summary="Scripted return for the delegated task.",
        evidence=[{"claim": "the data is what the test asked for", "source": "the prompt"}],
        artifactReferences=[],
        digests=[],
        changedState=[],
        unresolvedQuestions=[],
        retry={"retryable": False},
        data=json.loads(marker) if marker else {},
    )
    return Reply(f"Done.\n\n```json\n{json.dumps(body, indent=2)}\n```")
