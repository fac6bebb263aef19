"""Contract §7 child rows: a tampered or foreign result is never committed, and a reader call
is judged by the raw arguments the model sent, not by what Pi coerced."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from application.ledger_files import ATTESTATION_FILE, STATE_FILE
from tests.contract.child_attestation.world import COUNT, ChildWorld, read_all
from tests.fakes.pi_harness import read, result_texts, tool


def test_guard_blocks_a_reader_call_with_extra_properties(world: ChildWorld) -> None:
    role = world.make_role()
    decision = role.tool_call("x", "squad_spec_read", {"index": 0, "path": "/etc/passwd"})
    assert decision.block
    assert role.tool_call("x", "squad_spec_read", {"index": True}).block
    assert role.tool_call("x", "squad_spec_read", {"index": "0"}).block
    assert not role.tool_call("x", "squad_spec_read", {"index": 0}).block


def _replace_text(position: int, text: str) -> Any:
    def tamper(message: dict[str, Any]) -> dict[str, Any]:
        content = [dict(block) for block in message["content"]]
        content[position]["text"] = text
        return {**message, "content": content}

    return tamper


TAMPERS = {
    "chunk text": _replace_text(1, "forged"),
    "metadata text": _replace_text(0, '{"version":1}'),
    "details": lambda m: {**m, "details": {**m["details"], "chunkSha256": "0" * 64}},
    "marked as error": lambda m: {**m, "isError": True},
    "extra block": lambda m: {**m, "content": [*m["content"], {"type": "text", "text": ""}]},
    "one block dropped": lambda m: {**m, "content": m["content"][:1]},
    "other tool name": lambda m: {**m, "toolName": "read"},
}


@pytest.mark.parametrize("tamper", TAMPERS.values(), ids=TAMPERS.keys())
def test_tampered_result_is_never_committed(world: ChildWorld, tamper: Any) -> None:
    child = world.child()
    child.assistant_message([read(i) for i in range(COUNT)], tamper={"call-read-0": tamper})
    state = json.loads(Path(world.path(STATE_FILE)).read_bytes())
    assert 0 not in [d["index"] for d in state["deliveries"]]
    assert not os.path.exists(world.path(ATTESTATION_FILE))
    assert child.assistant_message([tool("bash")])[0]["isError"] is True


def test_a_result_for_an_unknown_tool_call_commits_nothing(world: ChildWorld) -> None:
    role = world.make_role()
    forged = {
        "role": "toolResult",
        "toolCallId": "never-executed",
        "toolName": "squad_spec_read",
        "content": [{"type": "text", "text": "{}"}, {"type": "text", "text": ""}],
        "details": {},
        "isError": False,
    }
    role.message_end(forged)
    assert not os.path.exists(world.path(STATE_FILE))


def test_conflicting_progress_record_invalidates_and_blocks(world: ChildWorld) -> None:
    child = world.child()
    child.assistant_message([read(0)])
    state = world.forged_progress()
    state_path = Path(world.path(STATE_FILE))
    os.chmod(state_path, 0o600)
    state_path.write_text(json.dumps(state))
    read_all(child)
    assert not os.path.exists(world.path(ATTESTATION_FILE))
    assert child.assistant_message([tool("bash")])[0]["isError"] is True
    assert "invalid" in child.system_prompt()


@pytest.mark.parametrize("raw", [{"index": "1"}, {"index": True}, {"index": None}, {"index": 1.5}])
def test_a_reader_call_whose_raw_arguments_pi_coerced_is_blocked_and_counts_nothing(
    world: ChildWorld, raw: object
) -> None:
    """Pi coerces ``"1"`` (and ``true``/``null``) to an integer before ``tool_call``; the
    assistant message shows what the model really sent, and only that is judged."""
    child = world.child()
    (message,) = child.assistant_message([read(1, "c1")], raw_arguments={"c1": raw})
    assert message["isError"] is True
    assert 'squad_spec_read takes exactly {"index": <integer >= 0>}' in result_texts(message)[0]
    assert not os.path.exists(world.path(STATE_FILE)), "no coverage recorded"


def test_a_strict_raw_call_beside_a_coerced_one_still_counts(world: ChildWorld) -> None:
    child = world.child()
    strict, coerced = child.assistant_message(
        [read(0, "ok"), read(1, "bad")], raw_arguments={"bad": {"index": "1"}}
    )
    assert strict["isError"] is False
    assert coerced["isError"] is True
    with open(world.path(STATE_FILE), "rb") as handle:
        state = json.loads(handle.read())
    assert [d["index"] for d in state["deliveries"]] == [0]
