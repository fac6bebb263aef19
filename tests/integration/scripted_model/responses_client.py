"""A client of the scripted model's ``openai-responses`` wire, with request bodies shaped as Pi
0.80.10's ``openai-responses`` provider shapes them.

It reads the event stream as Pi's ``processResponsesStream`` does and sends each assistant turn
back as Pi does: the reasoning item whole, the message, the function calls, then one
``function_call_output`` per call.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from adapters.scripted_model import MODEL_ID, ScriptedModelServer
from tests.integration.model_http import post as post_to
from tests.integration.scripted_model import wires

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


SPEC_READ = tool("squad_spec_read", parameters=wires.SPEC_READ_SCHEMA)
PI_TOOLS = [tool(name, *fields) for name, fields in wires.PI_TOOL_FIELDS.items()]


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
    return assemble(parse_stream(wires.event_stream(post(server, body))))


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


def calls_of(reply: wires.Reply) -> list[wires.Call]:
    return [wires.Call(c["id"], c["name"], c["arguments"]) for c in reply["tool_calls"]]


def send_back(body: dict[str, Any], reply: wires.Reply, results: list[str]) -> None:
    """The answer's items as Pi sends them back, then one ``function_call_output`` per call."""
    body["input"].extend(sent_back(reply))
    for call, output in zip(reply["tool_calls"], results, strict=True):
        body["input"].append(
            {"type": "function_call_output", "call_id": call["id"], "output": output}
        )


WITH_READER = {"tools": [*PI_TOOLS, SPEC_READ]}
WIRE = wires.Wire("openai-responses", request, WITH_READER, post, complete, calls_of, send_back)


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


def first_turn_sent_back(server: ScriptedModelServer) -> dict[str, Any]:
    """The second request of a ``bash-once`` conversation with thinking, reasoning item at
    ``input[2]``."""
    body = request("scripted-policy: bash-once", "go")
    send_back(body, complete(server, body), ["ok"])
    assert body["input"][2]["type"] == "reasoning"
    return body
