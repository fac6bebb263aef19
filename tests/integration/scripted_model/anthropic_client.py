"""A client of the scripted model's ``anthropic-messages`` wire, with request bodies shaped as Pi
0.80.10's ``anthropic-messages`` adapter sends them.

Whole conversations are driven as Pi drives them: each answer's thinking (with its signature),
text and ``tool_use`` blocks go back as the assistant message, and the calls' results follow
as one user message of ``tool_result`` blocks.
"""

from __future__ import annotations

import json
from typing import Any

from adapters.scripted_model import MODEL_ID, ScriptedModelServer
from tests.integration.model_http import post as post_to
from tests.integration.scripted_model import wires

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


# Pi's adapter keeps only ``properties`` and ``required`` of a tool's schema.
SPEC_READ = tool(
    "squad_spec_read",
    schema={key: wires.SPEC_READ_SCHEMA[key] for key in ("type", "properties", "required")},
)
PI_TOOLS = [tool(name, *fields) for name, fields in wires.PI_TOOL_FIELDS.items()]


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
    return assemble(parse_events(wires.event_stream(post(server, body))))


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


def calls_of(reply: wires.Reply) -> list[wires.Call]:
    return [wires.Call(c["id"], c["name"], c["input"]) for c in reply["tool_calls"]]


def send_back(body: dict[str, Any], reply: wires.Reply, results: list[str]) -> None:
    body["messages"].append(assistant_message(reply))
    body["messages"].append(results_message(reply["tool_calls"], results))


WITH_READER = {"tools": [*PI_TOOLS, SPEC_READ]}
WIRE = wires.Wire("anthropic-messages", request, WITH_READER, post, complete, calls_of, send_back)
