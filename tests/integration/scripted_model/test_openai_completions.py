"""The scripted model's ``openai-completions`` protocol refuses what OpenAI's Chat Completions
API refuses, in its words, and reports usage Pi prices; over real HTTP on loopback, no Pi."""

from __future__ import annotations

import json
from typing import Any

from adapters.scripted_model import ScriptedModelServer
from tests.integration.scripted_model.completions_client import (
    complete,
    parse_sse,
    post,
    request,
    tool,
)

ONE_OF = {"oneOf": [{"type": "object", "properties": {"a": {"type": "string"}}}]}


def refusal(server: ScriptedModelServer, body: dict[str, Any]) -> str:
    status, content_type, raw = post(server, body)
    assert (status, content_type) == (400, "application/json"), raw
    error = json.loads(raw)["error"]
    assert error["type"] == "invalid_request_error"
    message: str = error["message"]
    return message


def test_a_tool_with_a_top_level_one_of_gets_the_real_400(server: ScriptedModelServer) -> None:
    body = request("scripted-policy: echo", "hi", tools=[tool("bash"), tool("squad", ONE_OF)])
    assert refusal(server, body) == (
        "Invalid schema for function 'squad': schema must have type 'object' and not have "
        "'oneOf'/'anyOf'/'allOf'/'enum'/'not' at the top level."
    )
    assert server.exchanges() == []  # refused before any policy answered


def test_a_tool_name_outside_the_pattern_gets_the_real_400(server: ScriptedModelServer) -> None:
    body = request("scripted-policy: echo", "hi", tools=[tool("bash"), tool("squad.status")])
    assert refusal(server, body) == (
        "Invalid 'tools[1].function.name': string does not match pattern. Expected a string "
        "that matches the pattern '^[a-zA-Z0-9_-]+$'."
    )


def test_a_tool_result_answering_no_tool_call_gets_the_real_400(
    server: ScriptedModelServer,
) -> None:
    body = request("scripted-policy: echo", "hi")
    body["messages"].append({"role": "tool", "tool_call_id": "call_9_9", "content": "forged"})
    assert refusal(server, body) == (
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
        "message with 'tool_calls'."
    )


def test_a_tool_call_left_unanswered_gets_the_real_400(server: ScriptedModelServer) -> None:
    body = request("scripted-policy: echo", "hi")
    call = {"id": "call_1_0", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    body["messages"] += [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "user", "content": "and?"},
    ]
    assert "did not have response messages: call_1_0" in refusal(server, body)


def test_a_model_fills_only_the_fields_its_tool_schema_shows(server: ScriptedModelServer) -> None:
    system = 'scripted-policy: tool-once\nscripted-tool: squad\nscripted-args: {"goal": "g"}'
    shown = tool("squad", {"type": "object", "properties": {"specFile": {"type": "string"}}})
    reply = complete(server, request(system, "go", tools=[shown]))
    assert reply["tool_calls"][0]["arguments"] == {}  # ``goal`` was never shown


def test_usage_reports_cached_tokens_and_reasoning_beside_the_totals(
    server: ScriptedModelServer,
) -> None:
    status, _, raw = post(server, request("scripted-policy: echo", "hi"))
    assert status == 200
    (usage,) = [chunk["usage"] for chunk in parse_sse(raw) if chunk.get("usage")]
    assert usage["prompt_tokens"] > 0
    assert usage["completion_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert "cached_tokens" in usage["prompt_tokens_details"]
    assert "reasoning_tokens" in usage["completion_tokens_details"]


def thinking_body(**extra: Any) -> dict[str, Any]:
    return request("scripted-policy: bash-once", "go", thinking=True, **extra)


def test_a_reasoning_request_streams_reasoning_content_before_the_answer(
    server: ScriptedModelServer,
) -> None:
    status, _, raw = post(server, thinking_body())
    assert status == 200
    chunks = [c for c in parse_sse(raw) if c["choices"]]
    reasoning = "".join(c["choices"][0]["delta"].get("reasoning_content", "") for c in chunks)
    assert reasoning.startswith("Scripted reasoning, round 1: policy bash-once")
    first_call = next(i for i, c in enumerate(chunks) if c["choices"][0]["delta"].get("tool_calls"))
    last_reasoning = max(
        i for i, c in enumerate(chunks) if c["choices"][0]["delta"].get("reasoning_content")
    )
    assert last_reasoning < first_call
    usage = next(c["usage"] for c in parse_sse(raw) if c.get("usage"))
    assert usage["completion_tokens_details"]["reasoning_tokens"] > 0


def test_reasoning_sent_back_is_counted_and_reasoning_it_never_produced_is_refused(
    server: ScriptedModelServer,
) -> None:
    call = {"id": "call_1_0", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    answered = {"role": "tool", "tool_call_id": "call_1_0", "content": "ok"}

    def continued(reasoning: str) -> dict[str, Any]:
        body = thinking_body()
        assistant = {"role": "assistant", "content": None, "tool_calls": [call]}
        body["messages"] += [{**assistant, "reasoning_content": reasoning}, answered]
        return body

    status, _, _ = post(server, continued("Scripted reasoning, round 1: policy x answers."))
    assert status == 200
    (exchange,) = server.exchanges()
    assert exchange.conversation is not None
    assert exchange.conversation.thinking_returned == 1
    assert "does not match the reasoning this model produced" in refusal(
        server, continued("I decided to ignore the rules.")
    )
