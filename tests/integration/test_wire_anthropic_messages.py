"""The scripted model's ``anthropic-messages`` wire over real HTTP on loopback, with request
bodies shaped as Pi 0.80.10's ``anthropic-messages`` adapter sends them (no Pi).

Whole conversations are driven as Pi drives them: each answer's thinking (with its signature),
text and ``tool_use`` blocks go back as the assistant message, and the calls' results follow
as one user message of ``tool_result`` blocks.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from adapters.scripted_model import MODEL_ID, ScriptedModelServer
from adapters.scripted_model.policies import VERDICT_PASS
from adapters.scripted_model.wire.common import thinking_signature
from tests.integration.model_http import post as post_to

PATH = "/v1/messages"
CACHE = {"type": "ephemeral"}
THINKING = {"type": "enabled", "budget_tokens": 3072, "display": "summarized"}
ERROR_STATUS = 400


def tool(name: str, *fields: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """A tool as Pi's adapter converts it: only ``properties`` and ``required`` survive."""
    input_schema = schema or {
        "type": "object",
        "properties": {field: {"type": "string"} for field in fields},
        "required": [],
    }
    return {"name": name, "description": name, "input_schema": input_schema}


SPEC_READ = tool(
    "squad_spec_read",
    schema={
        "type": "object",
        "properties": {"index": {"type": "integer", "minimum": 0}},
        "required": ["index"],
    },
)
PI_TOOLS = [
    tool("read", "path", "offset", "limit"),
    tool("bash", "command", "timeout"),
    tool("edit", "path", "edits"),
    tool("write", "path", "content"),
]


def request(
    system: str,
    user: str,
    *,
    tools: list[dict[str, Any]] | None = None,
    thinking: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": MODEL_ID,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": user, "cache_control": CACHE}]}
        ],
        "max_tokens": 4096,
        "stream": True,
        "system": [{"type": "text", "text": system, "cache_control": CACHE}],
        "tools": PI_TOOLS if tools is None else tools,
    }
    if thinking:
        body["thinking"] = THINKING
    body.update(extra)
    return body


def post(server: ScriptedModelServer, body: object, path: str = PATH) -> tuple[int, str, bytes]:
    headers = {"x-api-key": "dummy", "anthropic-version": "2023-06-01"}
    return post_to(server, body, path, headers)


def parse_events(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    """Each event as ``(event name, data)``; every event names its type on an ``event:`` line."""
    events = []
    for chunk in raw.decode("utf-8").split("\n\n"):
        if not chunk:
            continue
        head, data = chunk.split("\n")
        assert head.startswith("event: "), chunk
        assert data.startswith("data: "), chunk
        document = json.loads(data[len("data: ") :])
        assert document["type"] == head[len("event: ") :]
        events.append((document["type"], document))
    return events


def assemble(events: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """What Pi's adapter rebuilds from the stream; asserts the order it relies on."""
    names = [name for name, _ in events]
    assert names[:2] == ["message_start", "ping"]
    assert names[-2:] == ["message_delta", "message_stop"]
    start = events[0][1]["message"]
    assert start["role"] == "assistant"
    assert start["content"] == []
    blocks: list[dict[str, Any]] = []
    open_index: int | None = None
    for name, event in events[2:-2]:
        if name == "content_block_start":
            assert open_index is None
            assert event["index"] == len(blocks)
            open_index = event["index"]
            blocks.append({"start": event["content_block"], "deltas": []})
        elif name == "content_block_delta":
            assert event["index"] == open_index
            blocks[-1]["deltas"].append(event["delta"])
        else:
            assert name == "content_block_stop"
            assert event["index"] == open_index
            open_index = None
    assert open_index is None
    reply: dict[str, Any] = {"thinking": None, "text": "", "tool_calls": [], "blocks": blocks}
    for block in blocks:
        kind, deltas = block["start"]["type"], block["deltas"]
        if kind == "thinking":
            assert [d["type"] for d in deltas][-1] == "signature_delta"
            text = "".join(d["thinking"] for d in deltas[:-1])
            reply["thinking"] = {"thinking": text, "signature": deltas[-1]["signature"]}
        elif kind == "text":
            reply["text"] += "".join(d["text"] for d in deltas)
        else:
            assert kind == "tool_use"
            assert block["start"]["input"] == {}
            assert deltas[0] == {"type": "input_json_delta", "partial_json": ""}
            raw = "".join(d["partial_json"] for d in deltas)
            reply["tool_calls"].append(
                {
                    "id": block["start"]["id"],
                    "name": block["start"]["name"],
                    "input": json.loads(raw) if raw else {},
                }
            )
    delta = events[-2][1]
    reply.update(
        id=start["id"],
        model=start["model"],
        start_usage=start["usage"],
        usage=delta["usage"],
        stop_reason=delta["delta"]["stop_reason"],
    )
    assert reply["stop_reason"] == ("tool_use" if reply["tool_calls"] else "end_turn")
    return reply


def complete(server: ScriptedModelServer, body: dict[str, Any]) -> dict[str, Any]:
    status, content_type, raw = post(server, body)
    assert status == 200, raw
    assert content_type.startswith("text/event-stream")
    return assemble(parse_events(raw))


def refusal(server: ScriptedModelServer, body: object) -> str:
    """The message of a 400 answer, after checking the API's error document around it."""
    status, content_type, raw = post(server, body)
    assert status == ERROR_STATUS, raw
    assert content_type == "application/json"
    document = json.loads(raw)
    assert set(document) == {"type", "error", "request_id"}
    assert document["type"] == "error"
    assert document["error"]["type"] == "invalid_request_error"
    assert document["request_id"].startswith("req_")
    message: str = document["error"]["message"]
    return message


def assistant_message(reply: dict[str, Any]) -> dict[str, Any]:
    """The reply as Pi sends it back: thinking with its signature, text, then tool uses."""
    content: list[dict[str, Any]] = []
    if reply["thinking"] is not None:
        content.append({"type": "thinking", **reply["thinking"]})
    if reply["text"].strip():
        content.append({"type": "text", "text": reply["text"]})
    content.extend({"type": "tool_use", **call} for call in reply["tool_calls"])
    return {"role": "assistant", "content": content}


def results_message(calls: list[dict[str, Any]], texts: list[str]) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": call["id"], "content": text, "is_error": False}
            for call, text in zip(calls, texts, strict=True)
        ],
    }


Runner = Callable[[list[dict[str, Any]]], list[str]]


def converse(
    server: ScriptedModelServer, body: dict[str, Any], run: Runner, *, max_rounds: int = 12
) -> list[dict[str, Any]]:
    body = json.loads(json.dumps(body))
    replies = []
    for _ in range(max_rounds):
        reply = complete(server, body)
        replies.append(reply)
        if not reply["tool_calls"]:
            return replies
        body["messages"].append(assistant_message(reply))
        body["messages"].append(results_message(reply["tool_calls"], run(reply["tool_calls"])))
    raise AssertionError("the conversation did not settle")


def spec_reader(chunks: int) -> Runner:
    def run(calls: list[dict[str, Any]]) -> list[str]:
        results = []
        for call in calls:
            assert call["name"] == "squad_spec_read"
            index = call["input"]["index"]
            metadata = {"version": 1, "taskId": "build", "index": index, "chunkCount": chunks}
            results.append(json.dumps(metadata) + f"\nchunk {index} text")
        return results

    return run


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer("echo") as running:
        yield running


# --- the stream -----------------------------------------------------------------------------


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


def test_same_request_same_bytes(server: ScriptedModelServer) -> None:
    body = request("scripted-policy: bash-once", "go", thinking=True)
    assert post(server, body)[2] == post(server, body)[2]


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
    body["messages"] += [
        assistant_message(first),
        results_message(first["tool_calls"], ["scripted-bash-ok"]),
    ]
    second = complete(server, body)
    usage = second["usage"]
    assert usage["cache_read_input_tokens"] > 0
    assert usage["cache_creation_input_tokens"] > 0
    prompt = usage["input_tokens"] + usage["cache_read_input_tokens"]
    prompt += usage["cache_creation_input_tokens"]
    assert prompt == len(json.dumps(body).encode()) // 4
    assert second["start_usage"]["input_tokens"] == usage["input_tokens"]


# --- tools and their schemas ----------------------------------------------------------------


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
    conversation = server.exchanges()[-1].conversation
    assert conversation is not None
    assert conversation.offers(name)


def test_two_tools_of_one_name_are_refused(server: ScriptedModelServer) -> None:
    body = request("sys", "hi", tools=[tool("read", "path"), tool("read", "path")])
    assert refusal(server, body) == "tools: Tool names must be unique."


# --- tool uses and their results ------------------------------------------------------------


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
    conversation = server.exchanges()[-1].conversation
    assert conversation is not None
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


# --- thinking -------------------------------------------------------------------------------


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
    body["messages"] += [
        assistant_message(first),
        results_message(first["tool_calls"], ["scripted-bash-ok"]),
    ]
    return body


def test_thinking_sent_back_unchanged_is_accepted_and_counted(
    server: ScriptedModelServer,
) -> None:
    reply = complete(server, second_round(server))
    assert reply["text"] == "bash said: scripted-bash-ok"
    assert reply["thinking"] is not None
    assert "round 2" in reply["thinking"]["thinking"]
    conversation = server.exchanges()[-1].conversation
    assert conversation is not None
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


# --- the request's other rules --------------------------------------------------------------


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


# --- whole conversations --------------------------------------------------------------------


def test_diligent_reads_every_chunk_over_several_rounds_with_thinking(
    server: ScriptedModelServer,
) -> None:
    body = request(
        "scripted-policy: diligent\nsquad-spec-chunks: 7",
        "go",
        tools=[*PI_TOOLS, SPEC_READ],
        thinking=True,
    )
    replies = converse(server, body, spec_reader(7))
    batches = [[c["input"]["index"] for c in r["tool_calls"]] for r in replies if r["tool_calls"]]
    assert batches == [[6, 5, 4], [3, 2, 1], [0]]
    assert [r["id"] for r in replies] == [f"msg_scripted_{n}" for n in range(1, 5)]
    assert replies[1]["tool_calls"][0]["id"] == "toolu_scripted_2_0"
    final = replies[-1]["text"]
    assert "[0, 1, 2, 3, 4, 5, 6] of 7" in final
    assert final.rstrip().endswith(VERDICT_PASS)
    returned = [e.conversation.thinking_returned for e in server.exchanges() if e.conversation]
    assert returned == [0, 1, 2, 3]
    assert all(r["thinking"] is not None for r in replies)
    assert all(r["usage"]["cache_read_input_tokens"] > 0 for r in replies[1:])
