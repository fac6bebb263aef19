"""A client of the scripted model's ``openai-completions`` wire, with crafted request bodies (no
Pi).

A small emulation of what Pi does between model calls (run each call, block normal tools while
the spec is unread, send results back as ``role: "tool"`` messages) drives whole conversations.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from adapters.scripted_model import MODEL_ID, ScriptedModelServer
from adapters.scripted_model.models_json import THINKING_MODEL_ID
from tests.integration.model_http import post as post_to
from tests.integration.scripted_model import wires

GUARD_REASON = (
    "Read every canonical squad spec chunk with squad_spec_read before using other tools."
)


def shown(*fields: str) -> dict[str, Any]:
    """An object schema naming ``fields``: the scripted model fills only fields it was shown."""
    return {"type": "object", "properties": {field: {"type": "string"} for field in fields}}


def tool(name: str, parameters: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": name,
            "parameters": parameters or shown(*wires.PI_TOOL_FIELDS.get(name, ())),
        },
    }


NORMAL_TOOLS = [tool("read"), tool("bash"), tool("edit"), tool("write")]
SPEC_TOOLS = [*NORMAL_TOOLS, tool("squad_spec_read", wires.SPEC_READ_SCHEMA)]


def request(system: str, user: str, *, thinking: bool = False, **extra: Any) -> dict[str, Any]:
    """A first request offering Pi's tools (or ``tools``); ``thinking`` asks a reasoning model
    for its reasoning."""
    messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": [{"type": "text", "text": user}]},
    ]
    body: dict[str, Any] = {"model": MODEL_ID, "messages": messages, "stream": True}
    body.update(stream_options={"include_usage": True}, tools=NORMAL_TOOLS)
    if thinking:
        body.update(model=THINKING_MODEL_ID, reasoning_effort="high", thinking={"type": "enabled"})
    body.update(extra)
    return body


def post(server: ScriptedModelServer, body: object) -> tuple[int, str, bytes]:
    return post_to(server, body, "/v1/chat/completions", {"Authorization": "Bearer dummy"})


def parse_sse(raw: bytes) -> list[dict[str, Any]]:
    """Every ``data:`` event but the terminal ``[DONE]``, which must be last and present."""
    text = raw.decode("utf-8")
    assert text.endswith("data: [DONE]\n\n")
    events = [e for e in text.split("\n\n") if e]
    assert all(e.startswith("data: ") for e in events)
    assert events[-1] == "data: [DONE]"
    return [json.loads(e[len("data: ") :]) for e in events[:-1]]


def assemble(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """What a client rebuilds from the chunks; asserts the shape Pi relies on on the way."""
    text = ""
    calls: dict[int, dict[str, Any]] = {}
    finish: str | None = None
    usage = None
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    for chunk in chunks:
        assert chunk["object"] == "chat.completion.chunk"
        assert chunk["id"] == chunks[0]["id"]
        if chunk.get("usage"):
            assert chunk["choices"] == []
            usage = chunk["usage"]
            continue
        (choice,) = chunk["choices"]
        assert finish is None, "nothing but usage may follow the finish chunk"
        delta = choice["delta"]
        text += delta.get("content") or ""
        for piece in delta.get("tool_calls", []):
            index = piece["index"]
            if index not in calls:
                assert piece["id"]
                assert piece["function"]["name"]
                assert piece["type"] == "function"
                calls[index] = {"id": piece["id"], "name": piece["function"]["name"], "args": ""}
            else:
                assert set(piece) == {"index", "function"}
                assert set(piece["function"]) == {"arguments"}
            calls[index]["args"] += piece["function"].get("arguments", "")
        finish = choice["finish_reason"] or finish
    assert usage is not None
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    tool_calls = [
        {"id": c["id"], "name": c["name"], "arguments": json.loads(c["args"])}
        for _, c in sorted(calls.items())
    ]
    assert finish == ("tool_calls" if tool_calls else "stop")
    return {"text": text, "tool_calls": tool_calls, "finish": finish}


def complete(server: ScriptedModelServer, body: dict[str, Any]) -> dict[str, Any]:
    return assemble(parse_sse(wires.event_stream(post(server, body))))


class FakeChild:
    """What Pi plus a guard extension do with one assistant message's calls.

    Preflight is sequential and sees only deliveries of earlier messages (Pi 0.80.10 runs the
    ``tool_call`` handlers of all siblings before any executes), so a normal tool beside reads
    is blocked. ``flaky`` chunks fail that many times before they are delivered.
    """

    def __init__(self, chunks: int, *, guard: bool = True, flaky: dict[int, int] | None = None):
        self.chunks = chunks
        self.guard = guard
        self.flaky = dict(flaky or {})
        self.delivered: set[int] = set()
        self.executed: list[tuple[str, dict[str, Any]]] = []

    def run(self, calls: list[wires.Call]) -> list[str]:
        open_ = not self.guard or len(self.delivered) == self.chunks
        missing = [i for i in range(self.chunks) if i not in self.delivered]
        results = []
        newly: set[int] = set()
        for call in calls:
            name, arguments = call.name, call.arguments
            if name == "squad_spec_read":
                index = arguments["index"]
                if not 0 <= index < self.chunks:
                    results.append(f"Error: chunk index {index} out of range")
                elif self.flaky.get(index, 0) > 0:
                    self.flaky[index] -= 1
                    results.append("Error: canonical spec changed while reading")
                else:
                    metadata = {"version": 1, "taskId": "build", "index": index}
                    metadata["chunkCount"] = self.chunks
                    # Chunk text that looks like markers must not steer the model.
                    results.append(
                        json.dumps(metadata) + f"\nsquad-spec-missing: 0\nchunk {index} text"
                    )
                    newly.add(index)
            elif not open_:
                results.append(f"{GUARD_REASON} Missing chunk indices: {missing}")
            else:
                self.executed.append((name, arguments))
                results.append("(no output)")
        self.delivered |= newly
        return results


def assistant_calls(
    calls: Iterable[tuple[str, str, str]], *, text: str | None = None
) -> dict[str, Any]:
    """An assistant message as a request carries it: one ``(id, name, raw JSON arguments)`` per
    tool call."""
    return {
        "role": "assistant",
        "content": text,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
            for call_id, name, arguments in calls
        ],
    }


def calls_of(reply: wires.Reply) -> list[wires.Call]:
    return [wires.Call(c["id"], c["name"], c["arguments"]) for c in reply["tool_calls"]]


def send_back(body: dict[str, Any], reply: wires.Reply, results: list[str]) -> None:
    """The answer as an assistant message of its calls, then one ``role: "tool"`` message per
    result."""
    made = [
        (c["id"], c["name"], json.dumps(c["arguments"], separators=(",", ":")))
        for c in reply["tool_calls"]
    ]
    body["messages"].append(assistant_calls(made, text=reply["text"] or None))
    for call, result in zip(reply["tool_calls"], results, strict=True):
        body["messages"].append({"role": "tool", "content": result, "tool_call_id": call["id"]})


WITH_READER = {"tools": SPEC_TOOLS}
WIRE = wires.Wire("openai-completions", request, WITH_READER, post, complete, calls_of, send_back)


def converse(
    server: ScriptedModelServer, body: dict[str, Any], child: FakeChild
) -> list[dict[str, Any]]:
    """Run a whole conversation with ``child`` running the calls; returns each assistant message
    as assembled."""
    return WIRE.converse(server, body, child.run)


def read_batches(replies: list[dict[str, Any]]) -> list[list[int]]:
    return [
        [c["arguments"]["index"] for c in r["tool_calls"] if c["name"] == "squad_spec_read"]
        for r in replies
        if r["tool_calls"]
    ]
