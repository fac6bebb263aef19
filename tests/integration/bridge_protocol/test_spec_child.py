"""A spec child's bridge: what hello describes, deliveries over concurrent executions that open the
guard, and what is committed by context and at shutdown."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from application.child.role import GUARD_REASON, READER_TOOL, reader_tool_spec
from application.ledger_files import ATTESTATION_FILE, STATE_FILE
from application.squads.create_squad import PublishedSquad
from domain.attestation import validate_attestation_bytes
from domain.attestation.binding import SpecBinding
from tests.integration.bridge_protocol.support import (
    COUNT,
    SPEC,
    TABLE,
    TASK,
    BridgeProcess,
    tool_result_message,
)


def test_hello_describes_a_spec_child(child: BridgeProcess) -> None:
    hello = child.result("hello", {"role": "child"})
    assert hello == {
        "role": "child-spec",
        "protocol": 1,
        "registrations": {
            "tools": [
                {
                    "name": READER_TOOL,
                    "label": reader_tool_spec().label,
                    "description": reader_tool_spec().description,
                    "parameters": dict(reader_tool_spec().parameters),
                }
            ],
            "commands": [],
            "guard": True,
            "messageEnd": True,
            "context": True,
            "bootstrap": True,
            "lifecycle": True,
        },
    }
    assert hello["registrations"]["tools"][0]["parameters"]["additionalProperties"] is False
    assert child.close() == 0


def test_a_full_read_over_concurrent_executions_opens_the_guard(
    child: BridgeProcess, published: PublishedSquad
) -> None:
    _start(child)
    append = child.result("before_agent_start")["append"]
    assert f"squad-spec-chunks: {COUNT}" in append
    assert child.result("tool_call", {"toolCallId": "c0", "toolName": "bash", "input": {}}) == {
        "block": True,
        "reason": GUARD_REASON,
    }
    # Every read in flight at once, in reverse order, as Pi runs sibling executions.
    ids = {
        child.request(
            "execute_tool",
            {"toolCallId": f"read-{i}", "toolName": READER_TOOL, "params": {"index": i}},
        ): i
        for i in reversed(range(COUNT))
    }
    results: dict[int, dict[str, Any]] = {}
    for _ in ids:
        response = child.next_message()
        assert response["ok"] is True, response
        index = ids[response["id"]]
        assert response["result"]["details"]["index"] == index, "matched by id"
        results[index] = response["result"]
    text = "".join(results[i]["texts"][1] for i in range(COUNT))
    assert text.encode() == SPEC
    for i in range(COUNT):
        metadata = json.loads(results[i]["texts"][0])
        assert metadata == results[i]["details"]
        assert metadata["chunkSha256"] == TABLE.chunk(i).sha256
    # Nothing counts before the finalised message_end of each call.
    assert child.result("tool_call", {"toolCallId": "c1", "toolName": "read", "input": {}})["block"]
    for i in range(COUNT):
        message = tool_result_message(f"read-{i}", results[i])
        assert child.result("message_end", {"message": message}) is None
    # They count from Pi's next model call on (its context event), not in this turn.
    assert child.result("tool_call", {"toolCallId": "c2", "toolName": "bash", "input": {}})["block"]
    assert not Path(published.squad_dir, TASK, STATE_FILE).exists()
    assert child.result("context") is None
    assert child.result("tool_call", {"toolCallId": "c3", "toolName": "bash", "input": {}}) == {
        "block": False
    }
    assert child.result("session_shutdown") is None
    assert child.close() == 0
    _assert_attested(published)


def test_deliveries_not_settled_when_the_input_ends_are_not_committed(
    child: BridgeProcess, published: PublishedSquad
) -> None:
    # Pi went away after the last message_end, before its next model call: it may not have
    # saved those results to its session, so they do not count and are read again (§8).
    _start_and_deliver_every_chunk(child)
    assert child.close() == 0
    assert not Path(published.squad_dir, TASK, STATE_FILE).exists()
    assert not Path(published.squad_dir, TASK, ATTESTATION_FILE).exists()


def _assert_attested(published: PublishedSquad) -> None:
    attestation = Path(published.squad_dir, TASK, ATTESTATION_FILE).read_bytes()
    binding = SpecBinding.of(TABLE, squad_id=published.squad.id, task_id=TASK)
    assert validate_attestation_bytes(attestation, binding, TABLE).valid


def _start(child: BridgeProcess) -> None:
    """What Pi sends before the first turn: the handshake, then the session's start."""
    child.result("hello")
    assert child.result("session_start") is None


def _start_and_deliver_every_chunk(child: BridgeProcess) -> None:
    _start(child)
    _deliver(child, range(COUNT))


def _deliver(child: BridgeProcess, indices: range) -> None:
    for i in indices:
        result = child.result(
            "execute_tool",
            {"toolCallId": f"read-{i}", "toolName": READER_TOOL, "params": {"index": i}},
        )
        message = tool_result_message(f"read-{i}", result)
        assert child.result("message_end", {"message": message}) is None


def test_context_answers_once_every_delivery_received_is_committed(
    child: BridgeProcess, published: PublishedSquad
) -> None:
    _start_and_deliver_every_chunk(child)
    assert not Path(published.squad_dir, TASK, STATE_FILE).exists()
    assert child.result("context") is None
    _assert_attested(published)
    assert child.close() == 0


def test_session_shutdown_commits_the_deliveries_received(
    child: BridgeProcess, published: PublishedSquad
) -> None:
    _start_and_deliver_every_chunk(child)
    assert child.result("session_shutdown") is None
    _assert_attested(published)  # before the bridge's input ends
    assert child.close() == 0


def test_context_says_why_a_commit_failed_and_the_chunk_stays_missing(
    child: BridgeProcess, published: PublishedSquad
) -> None:
    _start(child)
    spec = published.squad.spec
    assert spec is not None
    _deliver(child, range(1))
    assert child.result("context") is None
    result = child.result(
        "execute_tool", {"toolCallId": "read-1", "toolName": READER_TOOL, "params": {"index": 1}}
    )
    os.chmod(spec.path, 0o600)
    with open(spec.path, "r+b") as handle:  # the canonical file changes after the read
        handle.seek(3)
        original = handle.read(1)
        handle.seek(3)
        handle.write(bytes([original[0] ^ 1]))
    message = tool_result_message("read-1", result)
    assert child.result("message_end", {"message": message}) is None
    request_id = child.request("context")
    answer = child.next_message()
    assert answer["id"] == request_id
    assert answer["ok"] is False
    assert answer["error"]["code"] == "internal"
    assert "CanonicalIntegrityError" in answer["error"]["message"]
    assert child.result("context") is None  # reported once
    state = json.loads(Path(published.squad_dir, TASK, "spec-read-state.json").read_bytes())
    assert [d["index"] for d in state["deliveries"]] == [0]
    assert child.close() == 0
