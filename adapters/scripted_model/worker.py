"""The ``worker`` policy: a delegated worker of the `delegate` host (docs/delegation.md).

It learns its job from the packet line of the first user message (the canonical JSON the host
sends) and behaves as the ``worker-behaviour: NAME`` marker (in the job's question) says:

- ``valid``: reads line 1 of the first source, then answers a result whose evidence quotes it;
- ``unknown-source``: answers citing a source ID the host never issued;
- ``wrong-range``: answers citing lines 1-9999 of the first source;
- ``denied-tools``: first calls ``bash`` and ``delegate`` (not offered), then acts as ``valid``;
- ``overflow``: answers with ``worker-pad: N`` (default 40000) bytes of padding;
- ``provider-error``: every request fails (HTTP 500, a transient error);
- ``transient-once``: the job's first request fails (HTTP 500), then as ``valid`` (a host
  retry is a fresh worker with the same packet: the server remembers the packet);
- ``provider-refusal``: every request is refused (HTTP 400, a permanent error);
- ``slow``: searches again and again (``worker-searches: N``, default 40), then as ``valid``;
- ``cite-receipt``: cites the first evidence receipt it was granted (``cite_receipt``), then as
  ``valid``, its result naming that receipt as a second evidence entry;
- ``needs-context``: a first attempt answers ``needs_context`` (nothing covered, one
  ``missing`` entry: the gap a ``follow_up`` with ``context_gap`` addresses); an attempt whose
  packet carries a ``priorAttempt`` acts as ``valid``.

Hostile workers (issue 30: the limits must hold against them):

- ``bash-only``: every turn calls only ``bash`` (never offered, so Pi answers "not found"
  without any guard call) and never answers;
- ``huge-argument``: a ``search_source`` call whose query is ``worker-pad: N`` (default
  200000) bytes, streamed in pieces like any tool argument (a field the schema names: the
  server drops the others);
- ``context-overflow``: reads line 1 of the first source, then every later request is refused
  as too long for the model's context window (HTTP 400 with the text Pi takes for an overflow,
  which Pi answers with a compaction and a retry where compaction is on).
"""

from __future__ import annotations

import json
from typing import Any

from adapters.scripted_model.conversation import Conversation, RequestInvalid
from adapters.scripted_model.replies import PlannedCall, PolicyState, Reply

BEHAVIOUR_MARKER = "worker-behaviour"
PAD_MARKER = "worker-pad"
SEARCHES_MARKER = "worker-searches"
UNISSUED_SOURCE = "src-" + "0" * 32
# What OpenAI answers a request past the context window; Pi's ``isContextOverflow`` matches it.
CONTEXT_OVERFLOW = "Your input exceeds the context window of this model"


def _packet(conversation: Conversation) -> dict[str, Any]:
    for message in conversation.by_role("user"):
        for line in message.text.splitlines():
            if line.startswith('{"'):
                try:
                    document = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(document, dict) and "sources" in document:
                    return document
    return {"sources": [], "requirements": []}


def _result(packet: dict[str, Any], evidence: list[dict[str, Any]], answer: str) -> Reply:
    ids = [item["evidenceId"] for item in evidence]
    document = {
        "status": "complete",
        "answer": answer,
        "evidence": evidence,
        "coverage": [
            {
                "requirementId": r["id"],
                "state": "covered",
                "explanation": "cited",
                "evidenceIds": ids,
            }
            for r in packet.get("requirements", [])
        ],
        "findings": [
            {
                "findingId": "F1",
                "claim": "the cited line is as quoted",
                "trigger": "reading it",
                "consequence": "none",
                "basis": "observed" if ids else "unverified",
                "evidenceIds": ids,
                "contraryEvidenceIds": [],
                "limitations": "one line read",
            }
        ],
        "missing": [],
    }
    return Reply(json.dumps(document))


def _needs_context(packet: dict[str, Any]) -> Reply:
    document = {
        "status": "needs_context",
        "answer": "cannot tell without the caller of add()",
        "evidence": [],
        "coverage": [
            {
                "requirementId": r["id"],
                "state": "uncovered",
                "explanation": "the intended behaviour is not in the sources",
                "evidenceIds": [],
            }
            for r in packet.get("requirements", [])
        ],
        "findings": [],
        "missing": [
            {
                "neededEvidence": "what add() is meant to return",
                "affectedConclusion": "whether add() is correct",
                "reason": "the sources hold no specification",
            }
        ],
    }
    return Reply(json.dumps(document))


def _first_line(conversation: Conversation) -> str:
    calls = list(conversation.calls("read_source"))
    result = conversation.result_for(calls[-1][1].id) if calls else None
    lines = result.text.split("\n") if result is not None else []
    return lines[2] if len(lines) > 2 else ""


def _fail_as_scripted(
    behaviour: str, conversation: Conversation, state: PolicyState, packet: dict[str, Any]
) -> None:
    """Raises the provider's error ``behaviour`` scripts for this request, if it scripts one."""
    if behaviour == "provider-error":
        raise RuntimeError("scripted provider failure")
    if behaviour == "transient-once" and state.claim_first_failure(
        "transient-once:" + json.dumps(packet, sort_keys=True)
    ):
        raise RuntimeError("scripted provider failure, once")
    if behaviour == "provider-refusal":
        raise RequestInvalid("scripted refusal of the request")
    if behaviour == "context-overflow" and list(conversation.calls("read_source")):
        raise RequestInvalid(CONTEXT_OVERFLOW)


def worker(conversation: Conversation, state: PolicyState) -> Reply:
    packet = _packet(conversation)
    behaviour = conversation.marker(BEHAVIOUR_MARKER) or "valid"
    sources = packet.get("sources", [])
    first = sources[0] if sources else None
    if behaviour == "unknown-source":
        evidence = [{"evidenceId": "E1", "sourceId": UNISSUED_SOURCE, "lineStart": 1, "lineEnd": 1}]
        return _result(packet, evidence, "cites a source the host never issued")
    if behaviour == "wrong-range" and first is not None:
        evidence = [
            {
                "evidenceId": "E1",
                "sourceId": first["sourceId"],
                "lineStart": 1,
                "lineEnd": 9999,
                "sha256": first["sha256"],
            }
        ]
        return _result(packet, evidence, "cites lines the source does not have")
    if behaviour == "needs-context" and packet.get("priorAttempt") is None:
        return _needs_context(packet)
    _fail_as_scripted(behaviour, conversation, state, packet)
    if behaviour == "overflow":
        pad = int(conversation.marker(PAD_MARKER) or "40000")
        return _result(packet, [], "x" * pad)
    if behaviour == "bash-only":
        turn = len(list(conversation.calls("bash"))) + 1
        return Reply("", (PlannedCall("bash", {"command": f"echo turn {turn}"}),))
    if behaviour == "huge-argument":
        pad = int(conversation.marker(PAD_MARKER) or "200000")
        return Reply("", (PlannedCall("search_source", {"query": "y" * pad}),))
    if behaviour == "denied-tools" and not list(conversation.calls("bash")):
        return Reply(
            "",
            (
                PlannedCall("bash", {"command": "echo escaped"}),
                PlannedCall("delegate", {"version": 1, "op": "status"}),
            ),
        )
    if behaviour == "slow":
        wanted = int(conversation.marker(SEARCHES_MARKER) or "40")
        if len(list(conversation.calls("search_source"))) < wanted:
            return Reply("", (PlannedCall("search_source", {"query": "a"}),))
    receipts = packet.get("receipts", [])
    granted = receipts[0]["receiptId"] if behaviour == "cite-receipt" and receipts else None
    if granted is not None and not list(conversation.calls("cite_receipt")):
        return Reply("", (PlannedCall("cite_receipt", {"receiptId": granted}),))
    if first is None:
        return _result(packet, [], "no sources")
    if not list(conversation.calls("read_source")):
        return Reply(
            "",
            (
                PlannedCall(
                    "read_source", {"sourceId": first["sourceId"], "lineStart": 1, "lineEnd": 1}
                ),
            ),
        )
    quotation = _first_line(conversation)
    evidence = [
        {
            "evidenceId": "E1",
            "sourceId": first["sourceId"],
            "lineStart": 1,
            "lineEnd": 1,
            "sha256": first["sha256"],
            "quotation": quotation,
        }
    ]
    if granted is not None:
        evidence.append({"evidenceId": "E2", "receiptId": granted})
    return _result(packet, evidence, "the first line says what it says")
