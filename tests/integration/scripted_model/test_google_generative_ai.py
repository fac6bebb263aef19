"""The scripted model's ``google-generative-ai`` wire over real HTTP on loopback (no Pi): routing,
the stream, usage in Gemini's fields, thought signatures, and what the API refuses in its own
words."""

from __future__ import annotations

import json
from typing import Any

import pytest

from adapters.scripted_model import MODEL_ID, ScriptedModelServer
from adapters.scripted_model.models_json import RATES, models_config
from adapters.scripted_model.wire import protocol_for, token_usage
from adapters.scripted_model.wire.common import thinking_signature
from tests.integration.scripted_model.google_client import (
    BASH,
    PATH,
    WIRE,
    assemble,
    complete,
    declaration,
    events,
    post,
    refusal,
    request,
    send_back,
)
from tests.integration.scripted_model.wires import diligent_reading, last_conversation


def test_the_sdk_stream_path_is_this_wire_and_pi_is_pointed_at_it() -> None:
    protocol = protocol_for(PATH)
    assert protocol is not None
    assert protocol.api == "google-generative-ai"
    assert protocol_for(f"/v1beta/models/{MODEL_ID}:generateContent") is None
    provider = models_config("http://127.0.0.1:9/v1")["providers"]["fake-google"]
    assert provider["baseUrl"] == "http://127.0.0.1:9/v1beta"
    assert provider["api"] == "google-generative-ai"


def test_text_streams_in_pieces_and_the_last_event_stops(server: ScriptedModelServer) -> None:
    reply = complete(server, request("sys", "hello there, a longer prompt than one piece"))
    assert reply["text"] == "scripted echo: hello there, a longer prompt than one piece"
    assert reply["text_pieces"] > 1
    assert reply["calls"] == []
    assert reply["thinking"] == ""
    assert reply["text_signature"] is None


def test_a_call_streams_whole_with_name_args_and_id(server: ScriptedModelServer) -> None:
    body = request("scripted-policy: bash-once\nscripted-bash: echo hi")
    status, _, raw = post(server, body)
    assert status == 200
    stream = events(raw)
    calls = [
        p for e in stream for p in e["candidates"][0]["content"]["parts"] if "functionCall" in p
    ]
    assert calls == [
        {"functionCall": {"name": "bash", "args": {"command": "echo hi"}, "id": "call_1_0"}}
    ]
    assert stream[-1]["candidates"][0]["finishReason"] == "STOP"


def test_usage_reports_the_prompt_cache_answer_and_thinking_in_gemini_fields(
    server: ScriptedModelServer,
) -> None:
    body = request("scripted-policy: bash-once", thinking=True)
    first = complete(server, body)
    send_back(body, first, ["hi\n"])
    payload = json.dumps(body).encode()
    status, _, raw = post(server, body)
    assert status == 200
    stream = events(raw)
    second = assemble(stream)
    exchange = server.exchanges()[-1]
    expected = token_usage(len(payload), exchange.reply, 2)
    usage = second["usage"]
    assert expected.cache_read > 0
    assert expected.reasoning > 0
    assert usage["promptTokenCount"] == expected.prompt
    assert usage["cachedContentTokenCount"] == expected.cache_read
    assert usage["thoughtsTokenCount"] == expected.reasoning
    assert usage["candidatesTokenCount"] + usage["thoughtsTokenCount"] == expected.output
    assert usage["totalTokenCount"] == expected.prompt + expected.output
    assert usage["cacheTokensDetails"] == [{"modality": "TEXT", "tokenCount": expected.cache_read}]
    # Every earlier event carries the prompt side, as the API's do.
    assert all(e["usageMetadata"]["promptTokenCount"] == expected.prompt for e in stream)
    assert "candidatesTokenCount" not in stream[0]["usageMetadata"]
    # What Pi's adapter computes from it: input excludes the cache read; Gemini has no
    # cache-write count, so the written tokens are billed as input.
    pi_input = usage["promptTokenCount"] - usage["cachedContentTokenCount"]
    assert pi_input == expected.input + expected.cache_write
    cost = (
        pi_input * RATES["input"]
        + expected.output * RATES["output"]
        + expected.cache_read * RATES["cacheRead"]
    )
    assert cost > 0
    assert "cachedContentTokenCount" not in first["usage"]  # the first round reads no cache


def test_thinking_streams_first_with_its_signature_when_asked(server: ScriptedModelServer) -> None:
    reply = complete(server, request("scripted-policy: bash-once", thinking=True))
    assert reply["thinking"].startswith("Scripted reasoning, round 1: policy bash-once")
    assert reply["thinking_pieces"] > 1
    assert reply["thinking_signature"] == thinking_signature(reply["thinking"])
    (call,) = reply["calls"]
    assert call["thoughtSignature"] == reply["thinking_signature"]


def test_no_thinking_unless_thoughts_are_included(server: ScriptedModelServer) -> None:
    reply = complete(server, request("scripted-policy: bash-once"))
    assert reply["thinking"] == ""
    assert reply["calls"][0]["thoughtSignature"] is None
    conversation = last_conversation(server)
    assert conversation.reasoning is False


def test_thinking_sent_back_intact_is_accepted_and_counted(server: ScriptedModelServer) -> None:
    body = request("scripted-policy: bash-once", thinking=True)
    send_back(body, complete(server, body), ["hi\n"])
    final = complete(server, body)
    assert final["text"] == "bash said: hi\n"
    # A turn without calls signs its last text part, which Pi also sends back.
    assert final["text_signature"] == thinking_signature(final["thinking"])
    send_back(body, final, [])
    body["contents"].append({"parts": [{"text": "again"}], "role": "user"})
    complete(server, body)
    conversation = last_conversation(server)
    assert conversation.thinking_returned == 2


@pytest.mark.parametrize("tamper", ["thought text", "thought signature", "call signature"])
def test_a_tampered_thinking_block_sent_back_is_refused(
    server: ScriptedModelServer, tamper: str
) -> None:
    body = request("scripted-policy: bash-once", thinking=True)
    send_back(body, complete(server, body), ["hi\n"])
    thought, call = body["contents"][1]["parts"]
    if tamper == "thought text":
        thought["text"] = thought["text"].replace("bash-once", "lazy")
    elif tamper == "thought signature":
        thought["thoughtSignature"] = thinking_signature("something else")
    else:
        call["thoughtSignature"] = thinking_signature("something else")
    assert refusal(server, body) == "Corrupted thought signature."


@pytest.mark.parametrize("key", ["parametersJsonSchema", "parameters"])
@pytest.mark.parametrize(
    "schema",
    [
        {"oneOf": [BASH, {"type": "object", "properties": {"script": {"type": "string"}}}]},
        {"type": "object", "anyOf": [BASH], "properties": {}},
        {"type": "string"},
    ],
)
def test_a_parameters_schema_that_is_no_plain_object_is_refused(
    server: ScriptedModelServer, schema: dict[str, Any], key: str
) -> None:
    field = "parameters_json_schema" if key == "parametersJsonSchema" else "parameters"
    body = request("sys", declarations=[declaration("read"), declaration("bash", schema, key)])
    assert refusal(server, body) == (
        f"* GenerateContentRequest.tools[0].function_declarations[1].{field}: "
        "functionDeclaration parameters schema should be of type OBJECT\n"
    )


def test_every_invalid_function_name_is_listed(server: ScriptedModelServer) -> None:
    body = request(
        "sys",
        declarations=[
            declaration("1bash"),
            declaration("read"),
            declaration("squad spec read"),
            declaration("x" * 65),
            declaration("mcp:server.tool-name_2"),
        ],
    )
    rule = (
        "Invalid function name. Must start with a letter or an underscore. Must be alphameric "
        "(a-z, A-Z, 0-9), underscores (_), dots (.), colons (:), or dashes (-), with a maximum "
        "length of 64.\n"
    )
    assert refusal(server, body) == "".join(
        f"* GenerateContentRequest.tools[0].function_declarations[{i}].name: {rule}"
        for i in (0, 2, 3)
    )


def test_a_function_response_answering_no_call_is_refused(server: ScriptedModelServer) -> None:
    body = request("scripted-policy: bash-once")
    body["contents"].append(
        {"parts": [{"functionResponse": {"name": "bash", "response": {"output": "hi"}}}]}
    )
    assert refusal(server, body) == (
        "Please ensure that function response turn comes immediately after a function call turn."
    )


def test_a_function_response_of_a_name_not_called_is_refused(server: ScriptedModelServer) -> None:
    body = request("scripted-policy: bash-once")
    send_back(body, complete(server, body), ["hi\n"])
    body["contents"][-1]["parts"][0]["functionResponse"]["name"] = "read"
    assert refusal(server, body) == (
        "Please ensure that function response turn comes immediately after a function call turn."
    )


def test_function_responses_must_answer_every_call(server: ScriptedModelServer) -> None:
    body = request("scripted-policy: bash-once")
    send_back(body, complete(server, body), ["hi\n"])
    responses = body["contents"][-1]["parts"]
    body["contents"][-1]["parts"] = responses * 2
    assert refusal(server, body) == (
        "Please ensure that the number of function response parts is equal to the number of "
        "function call parts of the function call turn."
    )


def test_a_function_call_turn_must_follow_a_user_turn(server: ScriptedModelServer) -> None:
    body = request("scripted-policy: bash-once")
    body["contents"].append({"parts": [{"text": "thinking aloud"}], "role": "model"})
    body["contents"].append(
        {"parts": [{"functionCall": {"name": "bash", "args": {"command": "ls"}}}], "role": "model"}
    )
    assert refusal(server, body) == (
        "Please ensure that function call turn comes immediately after a user turn or after a "
        "function response turn."
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], 'Invalid JSON payload received. Unknown name "": Root element must be a message.'),
        ({"contents": []}, "* GenerateContentRequest.contents: contents is not specified\n"),
        (
            {"contents": [{"role": "assistant", "parts": [{"text": "hi"}]}]},
            "Please use a valid role: user, model.",
        ),
        (
            {"contents": [{"role": "user", "parts": []}]},
            "* GenerateContentRequest.contents[0].parts: contents.parts must not be empty.\n",
        ),
        (
            {"contents": [{"role": "user", "parts": [{"thought": True}]}]},
            "* GenerateContentRequest.contents[0].parts[0].data: required oneof field 'data' "
            "must have one initialized field\n",
        ),
    ],
)
def test_malformed_requests_are_refused_and_the_server_keeps_serving(
    server: ScriptedModelServer, body: object, message: str
) -> None:
    assert refusal(server, body) == message
    assert complete(server, request("sys", "still here"))["text"] == "scripted echo: still here"


def test_bash_once_conversation_pairs_the_result_with_its_call(
    server: ScriptedModelServer,
) -> None:
    body = request("scripted-policy: bash-once\nscripted-bash: echo from-gemini", thinking=True)
    first = complete(server, body)
    assert [(c["name"], c["args"]) for c in first["calls"]] == [
        ("bash", {"command": "echo from-gemini"})
    ]
    send_back(body, first, ["from-gemini\n"])
    final = complete(server, body)
    assert final["text"] == "bash said: from-gemini\n"
    assert final["calls"] == []
    conversation = last_conversation(server)
    assert [(m.role, m.round) for m in conversation.messages] == [
        ("system", 0),
        ("user", 0),
        ("assistant", 1),
        ("tool", 1),
    ]
    (call,) = conversation.messages[2].tool_calls
    assert (call.id, call.name, call.raw_arguments) == (
        "call_1_0",
        "bash",
        '{"command": "echo from-gemini"}',
    )
    assert conversation.messages[3].tool_call_id == "call_1_0"
    assert conversation.messages[3].text == "from-gemini\n"


def test_a_diligent_conversation_signs_each_answer_and_numbers_its_calls(
    server: ScriptedModelServer,
) -> None:
    replies = diligent_reading(WIRE, server)
    assert [r["thinking_signature"] for r in replies] == [
        thinking_signature(r["thinking"]) for r in replies
    ]
    conversation = last_conversation(server)
    assert conversation.thinking_returned == 3
    results = [m.tool_call_id for m in conversation.messages if m.role == "tool"]
    assert results == [f"call_{r}_{p}" for r, n in ((1, 3), (2, 3), (3, 1)) for p in range(n)]
