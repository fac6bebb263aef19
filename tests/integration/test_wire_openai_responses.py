"""The scripted model on the ``openai-responses`` wire, over real HTTP on loopback, with request
bodies shaped as Pi 0.80.10's ``openai-responses`` provider shapes them (no Pi).

A client here reads the event stream as Pi's ``processResponsesStream`` does and sends each
assistant turn back as Pi does: the reasoning item whole, the message, the function calls, then
one ``function_call_output`` per call.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from adapters.scripted_model import MODEL_ID, ScriptedModelServer
from adapters.scripted_model.policies import ECHO_PREFIX, VERDICT_PASS
from adapters.scripted_model.wire import token_usage
from adapters.scripted_model.wire.common import thinking_signature
from tests.integration.model_http import post as post_to

PATH = "/v1/responses"
SCHEMA_WORDS = (
    "schema must have type 'object' and not have 'oneOf'/'anyOf'/'allOf'/'enum'/'not' at the "
    "top level."
)


def tool(name: str, *fields: str, parameters: dict[str, Any] | None = None) -> dict[str, Any]:
    """A function tool as Pi's ``convertResponsesTools`` writes it."""
    shown = {"type": "object", "properties": {field: {"type": "string"} for field in fields}}
    return {
        "type": "function",
        "name": name,
        "description": name,
        "parameters": shown if parameters is None else parameters,
        "strict": False,
    }


SPEC_READ = tool(
    "squad_spec_read",
    parameters={
        "type": "object",
        "required": ["index"],
        "properties": {"index": {"type": "integer", "minimum": 0}},
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
    thinking: bool = True,
    tools: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A first request as Pi sends it for a reasoning model (``--thinking high`` or off)."""
    body: dict[str, Any] = {
        "model": MODEL_ID,
        "input": [
            {"role": "developer", "content": system},
            {"role": "user", "content": [{"type": "input_text", "text": user}]},
        ],
        "stream": True,
        "prompt_cache_key": "session-1",
        "store": False,
        "max_output_tokens": 4096,
        "tools": PI_TOOLS if tools is None else tools,
        "reasoning": {"effort": "high", "summary": "auto"} if thinking else {"effort": "none"},
    }
    if thinking:
        body["include"] = ["reasoning.encrypted_content"]
    body.update(extra)
    return body


def post(server: ScriptedModelServer, body: object) -> tuple[int, str, bytes]:
    return post_to(server, body, PATH, {"Authorization": "Bearer dummy"})


def refusal(server: ScriptedModelServer, body: object, status: int = 400) -> dict[str, Any]:
    """The error a refused request gets; nothing reaches a policy."""
    before = len(server.exchanges())
    got, content_type, raw = post(server, body)
    assert got == status, raw
    assert content_type == "application/json"
    assert len(server.exchanges()) == before
    document = json.loads(raw)
    assert set(document) == {"error"}
    assert set(document["error"]) == {"message", "type", "param", "code"}
    assert document["error"]["type"] == "invalid_request_error"
    error: dict[str, Any] = document["error"]
    return error


def parse_stream(raw: bytes) -> list[dict[str, Any]]:
    """Every event; each names its type on an ``event:`` line and in its data, sequence numbers
    count up from 0, and ``response.completed`` ends the stream (there is no ``[DONE]``)."""
    blocks = [block for block in raw.decode("utf-8").split("\n\n") if block]
    events = []
    for number, block in enumerate(blocks):
        head, data = block.split("\n")
        assert data.startswith("data: ")
        event = json.loads(data[len("data: ") :])
        assert head == f"event: {event['type']}"
        assert event["sequence_number"] == number
        events.append(event)
    assert [e["type"] for e in events[:2]] == ["response.created", "response.in_progress"]
    assert events[-1]["type"] == "response.completed"
    return events


def assemble(events: list[dict[str, Any]]) -> dict[str, Any]:
    """What Pi rebuilds from the events; asserts on the way that deltas add up to what each
    ``.done`` event and item say."""
    opened: dict[int, dict[str, Any]] = {}
    streamed: dict[int, str] = {}
    items: list[dict[str, Any]] = []
    for event in events:
        kind = event["type"]
        index: int = event.get("output_index", -1)
        if kind == "response.output_item.added":
            assert index == len(items)
            opened[index] = event["item"]
            streamed[index] = ""
        elif kind.endswith(".delta"):
            assert event["item_id"] == opened[index]["id"]
            streamed[index] += event["delta"]
        elif kind == "response.output_item.done":
            item = event["item"]
            assert item["id"] == opened.pop(index)["id"]
            assert streamed.pop(index) == _item_text(item)
            items.append(item)
    assert not opened
    response = events[-1]["response"]
    assert response["status"] == "completed"
    assert response["output"] == items
    assert [e["response"]["output"] for e in events[:2]] == [[], []]
    reasoning = [i for i in items if i["type"] == "reasoning"]
    return {
        "items": items,
        "thinking": "".join(_item_text(i) for i in reasoning),
        "text": "".join(_item_text(i) for i in items if i["type"] == "message"),
        "tool_calls": [
            {"id": i["call_id"], "name": i["name"], "arguments": json.loads(i["arguments"])}
            for i in items
            if i["type"] == "function_call"
        ],
        "usage": response["usage"],
        "events": events,
    }


def _item_text(item: dict[str, Any]) -> str:
    if item["type"] == "reasoning":
        return "\n\n".join(part["text"] for part in item["summary"])
    if item["type"] == "message":
        return "".join(part["text"] for part in item["content"])
    arguments: str = item["arguments"]
    return arguments


def complete(server: ScriptedModelServer, body: dict[str, Any]) -> dict[str, Any]:
    status, content_type, raw = post(server, body)
    assert status == 200, raw
    assert content_type.startswith("text/event-stream")
    return assemble(parse_stream(raw))


def sent_back(reply: dict[str, Any]) -> list[dict[str, Any]]:
    """The assistant turn as Pi's ``convertResponsesMessages`` sends it back."""
    items: list[dict[str, Any]] = []
    for item in reply["items"]:
        if item["type"] == "reasoning":
            items.append(copy.deepcopy(item))
        elif item["type"] == "message":
            text = "".join(part["text"] for part in item["content"])
            content = [{"type": "output_text", "text": text, "annotations": []}]
            items.append(
                {
                    "type": "message",
                    "role": "assistant",
                    "content": content,
                    "status": "completed",
                    "id": item["id"],
                }
            )
        else:
            items.append(
                {
                    "type": "function_call",
                    "id": item["id"],
                    "call_id": item["call_id"],
                    "name": item["name"],
                    "arguments": json.dumps(json.loads(item["arguments"]), separators=(",", ":")),
                }
            )
    return items


Runner = Callable[[str, dict[str, Any]], str]


def converse(
    server: ScriptedModelServer, body: dict[str, Any], run: Runner, *, max_rounds: int = 10
) -> list[dict[str, Any]]:
    """A whole conversation: each call run by ``run(name, arguments)``; returns every reply."""
    body = copy.deepcopy(body)
    replies = []
    for _ in range(max_rounds):
        reply = complete(server, body)
        replies.append(reply)
        if not reply["tool_calls"]:
            return replies
        body["input"].extend(sent_back(reply))
        for call in reply["tool_calls"]:
            output = run(call["name"], call["arguments"])
            body["input"].append(
                {"type": "function_call_output", "call_id": call["id"], "output": output}
            )
    raise AssertionError("the conversation did not settle")


def bash_turn(*, output: bool = True) -> list[dict[str, Any]]:
    """An earlier turn without thinking: one ``bash`` call, answered unless told otherwise."""
    items: list[dict[str, Any]] = [
        {
            "type": "function_call",
            "id": "fc_scripted_1_0",
            "call_id": "call_1_0",
            "name": "bash",
            "arguments": '{"command":"true"}',
        }
    ]
    if output:
        items.append({"type": "function_call_output", "call_id": "call_1_0", "output": "ok"})
    return items


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer("echo") as running:
        yield running


# --- the stream -----------------------------------------------------------------------------


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


def test_same_request_same_bytes(server: ScriptedModelServer) -> None:
    body = request("scripted-policy: bash-once", "go")
    assert post(server, body)[2] == post(server, body)[2]


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
    conversation = server.exchanges()[-1].conversation
    assert conversation is not None
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
    body["input"].extend(sent_back(first))
    body["input"].append(
        {"type": "function_call_output", "call_id": "call_1_0", "output": "scripted-bash-ok"}
    )
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


# --- whole conversations --------------------------------------------------------------------


def test_bash_once_with_thinking_carried_back_and_checked(server: ScriptedModelServer) -> None:
    ran: list[dict[str, Any]] = []

    def run(name: str, arguments: dict[str, Any]) -> str:
        ran.append({"name": name, **arguments})
        return "scripted-bash-ok\n"

    body = request("Agent prompt.\nscripted-policy: bash-once", "go")
    _, second = converse(server, body, run)
    assert ran == [{"name": "bash", "command": "echo scripted-bash-ok"}]
    assert second["text"] == "bash said: scripted-bash-ok\n"
    assert second["thinking"].startswith("Scripted reasoning, round 2:")
    assert second["items"][0]["id"] == "rs_scripted_2"
    conversation = server.exchanges()[-1].conversation
    assert conversation is not None
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


def test_diligent_reads_every_chunk_in_parallel_batches_then_passes(
    server: ScriptedModelServer,
) -> None:
    read: list[int] = []

    def run(name: str, arguments: dict[str, Any]) -> str:
        assert name == "squad_spec_read"
        read.append(arguments["index"])
        metadata = {"version": 1, "taskId": "build", "index": arguments["index"], "chunkCount": 7}
        return json.dumps(metadata) + f"\nchunk {arguments['index']} text"

    body = request(
        "scripted-policy: diligent\nsquad-spec-chunks: 7", "go", tools=[*PI_TOOLS, SPEC_READ]
    )
    replies = converse(server, body, run)
    batches = [[c["arguments"]["index"] for c in r["tool_calls"]] for r in replies]
    assert batches == [[6, 5, 4], [3, 2, 1], [0], []]
    assert sorted(read) == list(range(7))
    assert replies[-1]["text"].rstrip().endswith(VERDICT_PASS)
    assert "[0, 1, 2, 3, 4, 5, 6] of 7" in replies[-1]["text"]
    calls = [item for item in replies[0]["items"] if item["type"] == "function_call"]
    assert [item["call_id"] for item in calls] == [
        "call_1_0",
        "call_1_1",
        "call_1_2",
    ]
    returned = [e.conversation.thinking_returned for e in server.exchanges() if e.conversation]
    assert returned == [0, 1, 2, 3]
    final = server.exchanges()[-1].conversation
    assert final is not None
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
    conversation = server.exchanges()[-1].conversation
    assert conversation is not None
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


# --- what the API refuses -------------------------------------------------------------------


def test_a_tool_schema_with_top_level_one_of_is_refused(server: ScriptedModelServer) -> None:
    pick = tool(
        "pick",
        parameters={
            "type": "object",
            "oneOf": [
                {"properties": {"a": {"type": "string"}}},
                {"properties": {"b": {"type": "string"}}},
            ],
        },
    )
    error = refusal(server, request("sys", "go", tools=[*PI_TOOLS, pick]))
    assert error == {
        "message": f"Invalid schema for function 'pick': {SCHEMA_WORDS}",
        "type": "invalid_request_error",
        "param": "tools[4].parameters",
        "code": "invalid_function_parameters",
    }


@pytest.mark.parametrize(
    ("name", "message", "code"),
    [
        (
            "squad.read",
            "Invalid 'tools[0].name': string does not match pattern. Expected a string that "
            "matches the pattern '^[a-zA-Z0-9_-]+$'.",
            "invalid_value",
        ),
        (
            "x" * 65,
            "Invalid 'tools[0].name': string too long. Expected a string with maximum length "
            "64, but got a string with length 65 instead.",
            "string_above_max_length",
        ),
    ],
    ids=["pattern", "length"],
)
def test_a_tool_name_outside_the_pattern_is_refused(
    server: ScriptedModelServer, name: str, message: str, code: str
) -> None:
    error = refusal(server, request("sys", "go", tools=[tool(name, "x")]))
    assert error["message"] == message
    assert (error["param"], error["code"]) == ("tools[0].name", code)


def test_a_tool_output_answering_no_call_is_refused(server: ScriptedModelServer) -> None:
    body = request("sys", "go", thinking=False)
    body["input"].append({"type": "function_call_output", "call_id": "call_9_9", "output": "x"})
    error = refusal(server, body)
    assert error["message"] == "No tool call found for function call output with call_id call_9_9."
    assert (error["param"], error["code"]) == ("input", None)


def test_a_tool_output_before_its_call_answers_nothing(server: ScriptedModelServer) -> None:
    body = request("sys", "go", thinking=False)
    call, output = bash_turn()
    body["input"].extend([output, call])
    error = refusal(server, body)
    assert error["message"] == "No tool call found for function call output with call_id call_1_0."


def test_a_call_left_unanswered_is_refused(server: ScriptedModelServer) -> None:
    body = request("sys", "go", thinking=False)
    body["input"].extend(bash_turn(output=False))
    body["input"].append({"role": "user", "content": "and?"})
    error = refusal(server, body)
    assert error["message"] == "No tool output found for function call call_1_0."
    assert (error["param"], error["code"]) == ("input", None)


def test_an_item_id_without_its_type_prefix_is_refused(server: ScriptedModelServer) -> None:
    body = request("sys", "go", thinking=False)
    body["input"].extend(bash_turn())
    body["input"][2]["id"] = "item_1"
    error = refusal(server, body)
    assert (
        error["message"] == "Invalid 'input[2].id': 'item_1'. Expected an ID that begins with 'fc'."
    )
    assert (error["param"], error["code"]) == ("input[2].id", "invalid_id_prefix")


def first_turn_sent_back(server: ScriptedModelServer) -> dict[str, Any]:
    """The second request of a ``bash-once`` conversation with thinking, reasoning item at
    ``input[2]``."""
    body = request("scripted-policy: bash-once", "go")
    body["input"].extend(sent_back(complete(server, body)))
    body["input"].append({"type": "function_call_output", "call_id": "call_1_0", "output": "ok"})
    assert body["input"][2]["type"] == "reasoning"
    return body


def test_a_reasoning_summary_changed_on_its_way_back_is_refused(
    server: ScriptedModelServer,
) -> None:
    body = first_turn_sent_back(server)
    body["input"][2]["summary"][0]["text"] += " And something it never thought."
    error = refusal(server, body)
    assert error == {
        "message": "The encrypted content for item rs_scripted_1 could not be verified.",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_encrypted_content",
    }
    body["input"][2]["summary"][0]["text"] = "Scripted reasoning, round 1: policy bash-once"
    assert refusal(server, body)["code"] == "invalid_encrypted_content"


def test_encrypted_content_that_is_not_the_servers_is_refused(
    server: ScriptedModelServer,
) -> None:
    body = first_turn_sent_back(server)
    body["input"][2]["encrypted_content"] = "gAAAAABo-not-from-this-server"
    error = refusal(server, body)
    assert error["message"] == (
        "The encrypted content for item rs_scripted_1 could not be verified. Reason: "
        "Encrypted content could not be decrypted or parsed."
    )
    assert error["code"] == "invalid_encrypted_content"


def test_a_reasoning_item_without_its_content_is_not_found(server: ScriptedModelServer) -> None:
    body = first_turn_sent_back(server)
    del body["input"][2]["encrypted_content"]
    error = refusal(server, body, status=404)
    assert error["message"] == (
        "Item with id 'rs_scripted_1' not found. Items are not persisted when `store` is set "
        "to false. Try again with `store` set to true, or remove this item from your input."
    )


def test_a_reasoning_item_without_what_followed_it_is_refused(
    server: ScriptedModelServer,
) -> None:
    body = first_turn_sent_back(server)
    del body["input"][3:]
    body["input"].append({"role": "user", "content": "next"})
    error = refusal(server, body)
    assert error["message"] == (
        "Item 'rs_scripted_1' of type 'reasoning' was provided without its required following item."
    )
    assert (error["param"], error["code"]) == ("input", None)


def test_the_untouched_turn_is_accepted(server: ScriptedModelServer) -> None:
    body = first_turn_sent_back(server)
    assert complete(server, body)["text"] == "bash said: ok"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": MODEL_ID, "stream": True}, "input"),
        ({"model": MODEL_ID, "input": []}, "input"),
        ({"model": MODEL_ID, "input": ["hi"]}, "input[0]"),
        ({"model": MODEL_ID, "input": [{"role": "tool", "content": "x"}]}, "input[0].role"),
        ({"model": MODEL_ID, "input": "hi", "tools": {"name": "x"}}, "tools"),
    ],
)
def test_malformed_requests_are_refused_and_the_server_keeps_serving(
    server: ScriptedModelServer, body: dict[str, Any], param: str
) -> None:
    assert refusal(server, body)["param"] == param
    assert complete(server, request("sys", "still here"))["text"] == ECHO_PREFIX + "still here"


def test_a_body_that_is_no_json_gets_the_api_error_shape(server: ScriptedModelServer) -> None:
    status, _, raw = post(server, b"not json")
    assert status == 400
    assert set(json.loads(raw)["error"]) == {"message", "type", "param", "code"}
