"""The scripted model's ``openai-responses`` wire over real HTTP on loopback (no Pi): the event
stream, reasoning summaries with their signature, usage with cache reads and writes, and whole
conversations with the reasoning carried back."""

from __future__ import annotations

import json
from typing import Any

import pytest

from adapters.scripted_model import ScriptedModelServer
from adapters.scripted_model.policies import ECHO_PREFIX
from adapters.scripted_model.wire import token_usage
from adapters.scripted_model.wire.common import thinking_signature
from tests.integration.scripted_model.responses_client import (
    WIRE,
    bash_turn,
    complete,
    request,
    send_back,
)
from tests.integration.scripted_model.wires import Call, diligent_reading, last_conversation


def test_text_streams_as_one_message_item_in_several_deltas(server: ScriptedModelServer) -> None:
    user = "hello there, a prompt long enough to need several pieces"
    reply = complete(server, request("sys", user, thinking=False))
    assert reply["text"] == ECHO_PREFIX + user
    assert [item["type"] for item in reply["items"]] == ["message"]
    (message,) = reply["items"]
    assert message["id"] == "msg_scripted_1"
    assert message["role"] == "assistant"
    assert message["status"] == "completed"
    kinds = [event["type"] for event in reply["events"]]
    assert kinds.count("response.output_text.delta") > 1
    assert kinds[2:5] == [
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
    ]
    assert kinds[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]


def test_tool_call_streams_its_arguments_in_pieces_with_deterministic_ids(
    server: ScriptedModelServer,
) -> None:
    command = "echo a fairly long command line to split into pieces"
    body = request(f"scripted-policy: bash-once\nscripted-bash: {command}", "go", thinking=False)
    reply = complete(server, body)
    assert reply["tool_calls"] == [
        {"id": "call_1_0", "name": "bash", "arguments": {"command": command}}
    ]
    (item,) = reply["items"]
    assert item["id"] == "fc_scripted_1_0"
    assert item["status"] == "completed"
    events = reply["events"]
    added = next(e for e in events if e["type"] == "response.output_item.added")
    assert added["item"] == {**item, "status": "in_progress", "arguments": ""}
    deltas = [e for e in events if e["type"] == "response.function_call_arguments.delta"]
    assert len(deltas) > 2
    (done,) = [e for e in events if e["type"] == "response.function_call_arguments.done"]
    assert done["arguments"] == item["arguments"] == "".join(d["delta"] for d in deltas)
    # The API has no stop reason: a turn with calls completes like one without.
    assert events[-1]["response"]["status"] == "completed"


def test_thinking_streams_first_as_a_summary_with_its_signature(
    server: ScriptedModelServer,
) -> None:
    reply = complete(server, request("scripted-policy: bash-once", "go"))
    reasoning, call = reply["items"]
    assert reasoning["type"] == "reasoning"
    assert reasoning["id"] == "rs_scripted_1"
    assert reply["thinking"].startswith("Scripted reasoning, round 1: policy bash-once")
    assert reasoning["summary"] == [{"type": "summary_text", "text": reply["thinking"]}]
    assert reasoning["encrypted_content"] == thinking_signature(reply["thinking"])
    assert call["type"] == "function_call"
    kinds = [event["type"] for event in reply["events"]]
    assert kinds[2:5] == [
        "response.output_item.added",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
    ]
    assert kinds.count("response.reasoning_summary_text.delta") > 1
    assert "response.reasoning_summary_part.done" in kinds
    conversation = last_conversation(server)
    assert conversation.reasoning is True


@pytest.mark.parametrize(
    "reasoning", [{"effort": "none"}, None], ids=["effort-none", "no-reasoning"]
)
def test_no_thinking_unless_asked(server: ScriptedModelServer, reasoning: object) -> None:
    body = request("scripted-policy: bash-once", "go", reasoning=reasoning)
    reply = complete(server, body)
    assert [item["type"] for item in reply["items"]] == ["function_call"]
    assert reply["usage"]["output_tokens_details"] == {"reasoning_tokens": 0}


def test_usage_reports_the_prompt_with_cache_reads_and_writes(
    server: ScriptedModelServer,
) -> None:
    body = request("scripted-policy: bash-once", "go")
    first = complete(server, body)
    send_back(body, first, ["scripted-bash-ok"])
    second = complete(server, body)
    for round_number, (reply, exchange) in enumerate(
        zip([first, second], server.exchanges(), strict=True), start=1
    ):
        expected = token_usage(len(json.dumps(exchange.request)), exchange.reply, round_number)
        usage = reply["usage"]
        assert usage == {
            "input_tokens": expected.prompt,
            "input_tokens_details": {
                "cached_tokens": expected.cache_read,
                "cache_write_tokens": expected.cache_write,
            },
            "output_tokens": expected.output,
            "output_tokens_details": {"reasoning_tokens": expected.reasoning},
            "total_tokens": expected.prompt + expected.output,
        }
        assert expected.cache_write > 0
        assert expected.reasoning > 0
        # What Pi's adapter computes: input is what neither came from nor went to the cache.
        details = usage["input_tokens_details"]
        assert (
            usage["input_tokens"] - details["cached_tokens"] - details["cache_write_tokens"]
            == expected.input
            > 0
        )
    assert first["usage"]["input_tokens_details"]["cached_tokens"] == 0
    assert second["usage"]["input_tokens_details"]["cached_tokens"] > 0


def test_bash_once_with_thinking_carried_back_and_checked(server: ScriptedModelServer) -> None:
    ran: list[dict[str, Any]] = []

    def run(calls: list[Call]) -> list[str]:
        ran.extend({"name": call.name, **call.arguments} for call in calls)
        return ["scripted-bash-ok\n"] * len(calls)

    body = request("Agent prompt.\nscripted-policy: bash-once", "go")
    _, second = WIRE.converse(server, body, run)
    assert ran == [{"name": "bash", "command": "echo scripted-bash-ok"}]
    assert second["text"] == "bash said: scripted-bash-ok\n"
    assert second["thinking"].startswith("Scripted reasoning, round 2:")
    assert second["items"][0]["id"] == "rs_scripted_2"
    conversation = last_conversation(server)
    assert conversation.thinking_returned == 1
    assert conversation.system == "Agent prompt.\nscripted-policy: bash-once"
    assert [(m.role, m.round, m.text, m.tool_call_id) for m in conversation.messages] == [
        ("system", 0, "Agent prompt.\nscripted-policy: bash-once", None),
        ("user", 0, "go", None),
        ("assistant", 1, "", None),
        ("tool", 1, "scripted-bash-ok\n", "call_1_0"),
    ]
    (call,) = conversation.messages[2].tool_calls
    assert (call.id, call.name, dict(call.arguments)) == (
        "call_1_0",
        "bash",
        {"command": "echo scripted-bash-ok"},
    )
    assert call.raw_arguments == '{"command":"echo scripted-bash-ok"}'


def test_a_diligent_conversation_numbers_its_calls_and_rounds(
    server: ScriptedModelServer,
) -> None:
    replies = diligent_reading(WIRE, server)
    calls = [item for item in replies[0]["items"] if item["type"] == "function_call"]
    assert [item["call_id"] for item in calls] == [
        "call_1_0",
        "call_1_1",
        "call_1_2",
    ]
    returned = [e.conversation.thinking_returned for e in server.exchanges() if e.conversation]
    assert returned == [0, 1, 2, 3]
    final = last_conversation(server)
    assert [m.round for m in final.by_role("assistant")] == [1, 2, 3]
    assert [m.round for m in final.by_role("tool")] == [1, 1, 1, 2, 2, 2, 3]


def test_assistant_text_and_calls_of_one_turn_are_one_message(
    server: ScriptedModelServer,
) -> None:
    body = request("sys", "first", thinking=False)
    body["input"][2:] = [
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Looking.", "annotations": []}],
            "status": "completed",
            "id": "msg_pi_1",
        },
        *bash_turn(),
        {"role": "user", "content": [{"type": "input_text", "text": "again"}]},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "last"},
    ]
    assert complete(server, body)["text"] == ECHO_PREFIX + "last"
    conversation = last_conversation(server)
    assert [(m.role, m.round, m.text) for m in conversation.messages] == [
        ("system", 0, "sys"),
        ("user", 0, "first"),
        ("assistant", 1, "Looking."),
        ("tool", 1, "ok"),
        ("user", 1, "again"),
        ("assistant", 2, "Done."),
        ("user", 2, "last"),
    ]
    assert [c.id for c in conversation.messages[2].tool_calls] == ["call_1_0"]
    assert conversation.rounds == 2
