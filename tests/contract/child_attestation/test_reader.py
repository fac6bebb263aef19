"""Contract §6-§7 child rows: what the reader returns, and the coverage its reads build
(through the fake-Pi harness, on a fake and a real file system)."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from application.child.role import GUARD_REASON, SpecChildRole
from application.ledger_files import ATTESTATION_FILE, STATE_FILE
from tests.contract.child_attestation.world import COUNT, SPEC, TABLE, ChildWorld, read_all
from tests.fakes.pi_harness import read, result_texts, tool


def test_reader_result_is_two_text_blocks_metadata_then_exact_chunk_text(world: ChildWorld) -> None:
    child = world.child()
    for message in read_all(child):
        metadata_text, chunk_text = result_texts(message)
        index = message["details"]["index"]
        ref = TABLE.chunk(index)
        expected = {
            "version": 1,
            "squadId": world.published.squad.id,
            "taskId": "build",
            "index": index,
            "chunkCount": COUNT,
            "startByte": ref.start_byte,
            "endByteExclusive": ref.end_byte_exclusive,
            "chunkBytes": 32768,
            "chunkSha256": ref.sha256,
            "specBytes": len(SPEC),
            "specSha256": TABLE.spec_sha256,
        }
        assert metadata_text == json.dumps(expected, separators=(",", ":"))
        assert list(json.loads(metadata_text)) == list(expected), "fixed key order"
        assert message["details"] == expected
        assert chunk_text.encode() == SPEC[ref.start_byte : ref.end_byte_exclusive]


def test_reader_results_carry_their_texts_exact_utf8_for_the_bridge(world: ChildWorld) -> None:
    # The bridge writes ``utf8`` instead of encoding the text: they must never disagree.
    child = world.child()
    role = child.role
    assert isinstance(role, SpecChildRole)
    for index in range(COUNT):
        result = role.execute_tool(f"utf8-{index}", "squad_spec_read", {"index": index})
        ref = TABLE.chunk(index)
        assert result.utf8 == (None, SPEC[ref.start_byte : ref.end_byte_exclusive])
        assert result.utf8[1] == result.texts[1].encode("utf-8")


def test_concatenated_chunk_texts_are_exactly_the_canonical_bytes(world: ChildWorld) -> None:
    messages = read_all(world.child())
    assert "".join(result_texts(m)[1] for m in messages).encode() == SPEC


def test_reader_schema_is_exactly_one_non_negative_integer_index(world: ChildWorld) -> None:
    child = world.child()
    (spec,) = child.registrations.tools
    assert spec.name == "squad_spec_read"
    assert spec.parameters == {
        "type": "object",
        "additionalProperties": False,
        "required": ["index"],
        "properties": {"index": {"type": "integer", "minimum": 0}},
    }


@pytest.mark.parametrize(
    "order",
    [
        list(range(COUNT)),
        list(reversed(range(COUNT))),
        random.Random(7).sample(range(COUNT), COUNT),
    ],
    ids=["forward", "reverse", "random"],
)
def test_any_order_completes_with_a_sorted_attestation(world: ChildWorld, order: list[int]) -> None:
    child = world.child()
    for index in order:
        child.assistant_message([read(index)])
    attestation = world.attestation()
    assert [c["index"] for c in attestation["chunks"]] == list(range(COUNT))
    assert world.attestation_valid()
    assert attestation["chunks"][order[0]]["toolCallId"] == f"call-read-{order[0]}"


def test_concurrent_reads_in_one_message_complete_coverage(world: ChildWorld) -> None:
    child = world.child()
    child.assistant_message([read(i) for i in random.Random(3).sample(range(COUNT), COUNT)])
    assert world.attestation_valid()
    child.assistant_message([tool("bash", command="true")])
    assert child.executed_names() == ["bash"]


def test_duplicate_identical_chunk_does_not_inflate_coverage(world: ChildWorld) -> None:
    child = world.child()
    for _ in range(3):
        child.assistant_message([read(0, call_id=f"dup-{_}")])
    assert not os.path.exists(world.path(ATTESTATION_FILE))
    state = json.loads(Path(world.path(STATE_FILE)).read_bytes())
    assert [d["index"] for d in state["deliveries"]] == [0]
    assert state["deliveries"][0]["toolCallId"] == "dup-0", "the original record is kept"
    assert (
        "Missing chunk indices: [" + ", ".join(map(str, range(1, COUNT))) + "]"
        in child.system_prompt()
    )


def test_redundant_reads_after_completion_never_rewrite_the_attestation(world: ChildWorld) -> None:
    child = world.child()
    read_all(child)
    before = Path(world.path(ATTESTATION_FILE)).read_bytes()
    world.clock.advance(60)
    messages = child.assistant_message([read(1, call_id="again")])
    assert (
        result_texts(messages[0])[1].encode()
        == SPEC[TABLE.chunk(1).start_byte : TABLE.chunk(1).end_byte_exclusive]
    )
    assert Path(world.path(ATTESTATION_FILE)).read_bytes() == before


def test_missing_chunk_leaves_every_normal_tool_blocked(world: ChildWorld) -> None:
    child = world.child()
    child.assistant_message([read(i) for i in range(COUNT - 1)])
    (message,) = child.assistant_message([tool("bash", command="cat spec")])
    assert message["isError"] is True
    assert result_texts(message) == [GUARD_REASON]
    assert child.executed == []
    assert f"Missing chunk indices: [{COUNT - 1}]" in child.system_prompt()


@pytest.mark.parametrize("index", [COUNT, COUNT + 10, 2**40])
def test_out_of_range_index_is_an_error_and_records_nothing(world: ChildWorld, index: int) -> None:
    child = world.child()
    (message,) = child.assistant_message([read(index)])
    assert message["isError"] is True
    assert "out of range" in result_texts(message)[0]
    assert not os.path.exists(world.path(STATE_FILE))


def test_negative_index_fails_validation_before_the_guard_sees_it(world: ChildWorld) -> None:
    child = world.child()
    (message,) = child.assistant_message([tool("squad_spec_read", call_id="neg", index=-1)])
    assert message["isError"] is True
    assert "Validation failed" in result_texts(message)[0]
    assert "neg" not in child.preflighted


def test_every_read_of_a_chunk_returns_the_same_blocks(world: ChildWorld) -> None:
    child = world.child()
    first = child.assistant_message([read(2, call_id="a")])
    again = child.assistant_message([read(2, call_id="b")])
    assert result_texts(first[0]) == result_texts(again[0])
    assert first[0]["details"] == again[0]["details"]
    assert world.recorded_indices() == [2]
