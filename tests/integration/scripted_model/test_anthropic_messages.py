"""The scripted model's ``anthropic-messages`` wire over real HTTP on loopback (no Pi): the stream,
tools and their schemas, tool uses and their results, thinking with its signature, and what the
API refuses in its own words."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from adapters.scripted_model import MODEL_ID, ScriptedModelServer
from adapters.scripted_model.wire.common import thinking_signature
from tests.integration.scripted_model.anthropic_client import (
    WIRE,
    assemble,
    complete,
    parse_events,
    post,
    refusal,
    request,
    send_back,
    tool,
)
from tests.integration.scripted_model.wires import diligent_reading, last_conversation


def test_text_streams_as_one_text_block_in_several_deltas(server: ScriptedModelServer) -> None:
    status, _, raw = post(server, request("sys", "hello there, a longer prompt to echo back"))
    assert status == 200
    events = parse_events(raw)
    reply = assemble(events)
    assert reply["text"] == "scripted echo: hello there, a longer prompt to echo back"
    assert reply["thinking"] is None
    assert reply["tool_calls"] == []
    assert reply["id"] == "msg_scripted_1"
    assert reply["model"] == MODEL_ID
    (block,) = reply["blocks"]
    assert block["start"] == {"type": "text", "text": ""}
    assert len(block["deltas"]) > 1
    assert {d["type"] for d in block["deltas"]} == {"text_delta"}


def test_tool_call_streams_id_and_name_then_argument_pieces(server: ScriptedModelServer) -> None:
    command = "echo a fairly long command line to split into pieces"
    body = request(f"scripted-policy: bash-once\nscripted-bash: {command}", "go")
    reply = complete(server, body)
    assert reply["tool_calls"] == [
        {"id": "toolu_scripted_1_0", "name": "bash", "input": {"command": command}}
    ]
    (block,) = reply["blocks"]
    assert len(block["deltas"]) > 2
    assert reply["stop_reason"] == "tool_use"


def test_a_request_without_stream_is_streamed_as_pi_always_asks(
    server: ScriptedModelServer,
) -> None:
    body = request("sys", "hi")
    del body["stream"]
    status, content_type, raw = post(server, body)
    assert status == 200
    assert content_type.startswith("text/event-stream")
    assert assemble(parse_events(raw))["text"] == "scripted echo: hi"


def test_usage_reports_input_output_and_cache_fields(server: ScriptedModelServer) -> None:
    body = request("scripted-policy: bash-once", "go")
    first = complete(server, body)
    for usage in (first["start_usage"], first["usage"]):
        assert usage["input_tokens"] > 0
        assert usage["cache_creation_input_tokens"] > 0
        assert usage["cache_read_input_tokens"] == 0
    assert first["usage"]["output_tokens"] > 0
    send_back(body, first, ["scripted-bash-ok"])
    second = complete(server, body)
    usage = second["usage"]
    assert usage["cache_read_input_tokens"] > 0
    assert usage["cache_creation_input_tokens"] > 0
    prompt = usage["input_tokens"] + usage["cache_read_input_tokens"]
    prompt += usage["cache_creation_input_tokens"]
    assert prompt == len(json.dumps(body).encode()) // 4
    assert second["start_usage"]["input_tokens"] == usage["input_tokens"]


def test_a_call_carries_only_the_arguments_its_schema_shows(server: ScriptedModelServer) -> None:
    system = 'scripted-policy: tool-once\nscripted-tool: probe\nscripted-args: {"a": 1, "b": 2}'
    shown = complete(server, request(system, "go", tools=[tool("probe", "a")]))
    assert shown["tool_calls"][0]["input"] == {"a": 1}
    empty = tool("probe", schema={"type": "object", "properties": {}, "required": []})
    bare = complete(server, request(system, "go", tools=[empty]))
    (call,) = bare["tool_calls"]
    assert call["name"] == "probe"
    assert call["input"] == {}
    assert [d["partial_json"] for d in bare["blocks"][0]["deltas"]] == [""]
    assert server.exchanges()[-1].reply.tool_calls[0].arguments == {}


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "array", "items": {"type": "string"}},
        {"oneOf": [{"type": "object"}, {"type": "string"}]},
    ],
)
def test_an_input_schema_that_is_no_object_is_refused(
    server: ScriptedModelServer, schema: dict[str, Any]
) -> None:
    body = request("sys", "hi", tools=[tool("read", "path"), tool("odd", schema=schema)])
    assert refusal(server, body) == "tools.1.custom.input_schema.type: Input should be 'object'"


@pytest.mark.parametrize("name", ["bad.name", "has space", "", "x" * 129])
def test_a_tool_name_outside_the_pattern_is_refused(server: ScriptedModelServer, name: str) -> None:
    body = request("sys", "hi", tools=[tool(name, "a")])
    assert refusal(server, body) == (
        "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'"
    )


def test_a_long_tool_name_inside_the_pattern_is_offered(server: ScriptedModelServer) -> None:
    name = "x" * 128
    complete(server, request("sys", "hi", tools=[tool(name, "a")]))
    conversation = last_conversation(server)
    assert conversation.offers(name)


def test_two_tools_of_one_name_are_refused(server: ScriptedModelServer) -> None:
    body = request("sys", "hi", tools=[tool("read", "path"), tool("read", "path")])
    assert refusal(server, body) == "tools: Tool names must be unique."


def tool_round(*, use: str, results: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": use, "name": "bash", "input": {"command": "x"}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": answered, "content": "ok"}
                for answered in results
            ],
        },
    ]


def test_a_tool_result_answering_no_tool_use_is_refused(server: ScriptedModelServer) -> None:
    body = request("sys", "hi")
    body["messages"] += tool_round(use="toolu_a", results=["toolu_a", "toolu_stray"])
    assert refusal(server, body) == (
        "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: "
        "toolu_stray. Each `tool_result` block must have a corresponding `tool_use` block in "
        "the previous message."
    )


def test_a_tool_result_in_the_first_message_is_refused(server: ScriptedModelServer) -> None:
    body = request("sys", "hi")
    body["messages"] = tool_round(use="toolu_a", results=["toolu_a"])[1:]
    assert refusal(server, body).startswith(
        "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_a."
    )


def test_a_tool_use_left_unanswered_is_refused(server: ScriptedModelServer) -> None:
    body = request("sys", "hi")
    body["messages"] += tool_round(use="toolu_a", results=[])[:1]
    body["messages"].append({"role": "user", "content": "and now?"})
    assert refusal(server, body) == (
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
        "toolu_a. Each `tool_use` block must have a corresponding `tool_result` block in the "
        "next message."
    )


def test_the_conversation_keeps_roles_rounds_calls_and_results(
    server: ScriptedModelServer,
) -> None:
    body = request("scripted-policy: echo", "first")
    body["messages"] += [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}},
                {"type": "tool_use", "id": "toolu_2", "name": "bash", "input": {"command": "ls"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
                },
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "listing"},
                {"type": "text", "text": "steer: go on"},
            ],
        },
    ]
    assert complete(server, body)["text"] == "scripted echo: steer: go on"
    conversation = last_conversation(server)
    assert [(m.role, m.round, m.text) for m in conversation.messages] == [
        ("system", 0, "scripted-policy: echo"),
        ("user", 0, "first"),
        ("assistant", 1, "Looking."),
        ("tool", 1, "one\ntwo"),
        ("tool", 1, "listing"),
        ("user", 1, "steer: go on"),
    ]
    calls = conversation.messages[2].tool_calls
    assert [(c.id, c.name, dict(c.arguments), c.raw_arguments) for c in calls] == [
        ("toolu_1", "read", {"path": "a"}, '{"path":"a"}'),
        ("toolu_2", "bash", {"command": "ls"}, '{"command":"ls"}'),
    ]
    assert [m.tool_call_id for m in conversation.by_role("tool")] == ["toolu_1", "toolu_2"]
    assert conversation.tools["read"]["properties"] == {
        "path": {"type": "string"},
        "offset": {"type": "string"},
        "limit": {"type": "string"},
    }
    assert not conversation.reasoning
    assert conversation.stream


def test_thinking_streams_first_with_its_signature_when_asked(
    server: ScriptedModelServer,
) -> None:
    reply = complete(server, request("scripted-policy: bash-once", "go", thinking=True))
    thinking = reply["thinking"]
    assert thinking is not None
    assert thinking["thinking"] == server.exchanges()[-1].reply.thinking
    assert "round 1" in thinking["thinking"]
    assert "bash" in thinking["thinking"]
    assert thinking["signature"] == thinking_signature(thinking["thinking"])
    first = reply["blocks"][0]
    assert first["start"] == {"type": "thinking", "thinking": "", "signature": ""}
    assert [d["type"] for d in first["deltas"]].count("thinking_delta") > 1
    assert [b["start"]["type"] for b in reply["blocks"]] == ["thinking", "tool_use"]
    assert reply["usage"]["output_tokens_details"]["thinking_tokens"] > 0
    plain = complete(server, request("scripted-policy: bash-once", "go"))
    assert plain["thinking"] is None
    disabled = request("scripted-policy: bash-once", "go", thinking=True)
    disabled["thinking"] = {"type": "disabled"}
    assert complete(server, disabled)["thinking"] is None


def second_round(server: ScriptedModelServer) -> dict[str, Any]:
    """A bash-once conversation with thinking on, after its first answer."""
    body = request("scripted-policy: bash-once", "go", thinking=True)
    first = complete(server, body)
    send_back(body, first, ["scripted-bash-ok"])
    return body


def test_thinking_sent_back_unchanged_is_accepted_and_counted(
    server: ScriptedModelServer,
) -> None:
    reply = complete(server, second_round(server))
    assert reply["text"] == "bash said: scripted-bash-ok"
    assert reply["thinking"] is not None
    assert "round 2" in reply["thinking"]["thinking"]
    conversation = last_conversation(server)
    assert conversation.thinking_returned == 1


@pytest.mark.parametrize("field", ["thinking", "signature"])
def test_a_tampered_thinking_block_is_refused(server: ScriptedModelServer, field: str) -> None:
    body = second_round(server)
    block = body["messages"][1]["content"][0]
    assert block["type"] == "thinking"
    block[field] = block[field][:-4] + "XXXX"
    assert refusal(server, body) == "messages.1.content.0: Invalid `signature` in `thinking` block"


def test_a_thinking_block_without_signature_is_refused(server: ScriptedModelServer) -> None:
    body = second_round(server)
    del body["messages"][1]["content"][0]["signature"]
    assert refusal(server, body) == "messages.1.content.0.thinking.signature: Field required"


def test_with_thinking_on_the_last_tool_round_must_open_with_its_thinking(
    server: ScriptedModelServer,
) -> None:
    body = second_round(server)
    body["messages"][1]["content"].pop(0)
    message = refusal(server, body)
    assert message.startswith(
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
        "`tool_use`. When `thinking` is enabled, a final `assistant` message must start with a "
        "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks)."
    )
    del body["thinking"]
    assert complete(server, body)["text"] == "bash said: scripted-bash-ok"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda b: b.pop("max_tokens"), "max_tokens: Field required"),
        (lambda b: b.pop("model"), "model: Field required"),
        (lambda b: b.update(messages=[]), "messages: at least one message is required"),
        (
            lambda b: b.update(thinking={"type": "enabled", "budget_tokens": 512}),
            "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
        ),
        (
            lambda b: b.update(
                max_tokens=2048, thinking={"type": "enabled", "budget_tokens": 2048}
            ),
            "`max_tokens` must be greater than `thinking.budget_tokens`.",
        ),
        (
            lambda b: b["messages"].insert(0, {"role": "system", "content": "x"}),
            'messages: Unexpected role "system".',
        ),
        (
            lambda b: b["messages"].append(
                {"role": "user", "content": [{"type": "text", "text": ""}]}
            ),
            "messages: text content blocks must be non-empty",
        ),
        (
            lambda b: b["messages"].append({"role": "user", "content": []}),
            "messages.1: all messages must have non-empty content except for the optional final "
            "assistant message",
        ),
    ],
)
def test_malformed_requests_are_refused_in_the_api_s_words(
    server: ScriptedModelServer, change: Callable[[dict[str, Any]], object], message: str
) -> None:
    body = request("sys", "hi")
    change(body)
    assert refusal(server, body).startswith(message)
    assert complete(server, request("sys", "still serving"))["text"].endswith("still serving")


def test_a_diligent_conversation_numbers_its_messages_and_carries_thinking_back(
    server: ScriptedModelServer,
) -> None:
    replies = diligent_reading(WIRE, server)
    assert [r["id"] for r in replies] == [f"msg_scripted_{n}" for n in range(1, 5)]
    assert replies[1]["tool_calls"][0]["id"] == "toolu_scripted_2_0"
    returned = [e.conversation.thinking_returned for e in server.exchanges() if e.conversation]
    assert returned == [0, 1, 2, 3]
    assert all(r["thinking"] is not None for r in replies)
    assert all(r["usage"]["cache_read_input_tokens"] > 0 for r in replies[1:])
