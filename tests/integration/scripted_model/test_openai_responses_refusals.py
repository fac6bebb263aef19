"""What the scripted model's ``openai-responses`` wire refuses, in the Responses API's words and
error shape: tool schemas and names, outputs answering no call, reasoning items changed on their
way back, malformed bodies."""

from __future__ import annotations

import json
from typing import Any

import pytest

from adapters.scripted_model import MODEL_ID, ScriptedModelServer
from adapters.scripted_model.policies import ECHO_PREFIX
from tests.integration.scripted_model.responses_client import (
    PI_TOOLS,
    SCHEMA_WORDS,
    bash_turn,
    complete,
    first_turn_sent_back,
    post,
    refusal,
    request,
    tool,
)


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
