"""A client of the scripted model's ``google-generative-ai`` wire, with request bodies shaped as Pi
0.80.10's Gemini adapter (through ``@google/genai``) sends them.

A small emulation of that adapter (``send_back``) turns each streamed answer back into the ``model``
turn Pi sends next (thought part, text part, ``functionCall`` parts without ids, signatures
where they streamed) followed by one ``user`` turn of ``functionResponse`` parts.
"""

from __future__ import annotations

import json
from typing import Any

from adapters.scripted_model import MODEL_ID, ScriptedModelServer
from tests.integration.model_http import post as post_to
from tests.integration.scripted_model import wires

PATH = f"/v1beta/models/{MODEL_ID}:streamGenerateContent"
BASH = {
    "type": "object",
    "required": ["command"],
    "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}},
}
SPEC_READ = wires.SPEC_READ_SCHEMA


def declaration(name: str, schema: object = BASH, key: str = "parametersJsonSchema") -> Any:
    return {"name": name, "description": name, key: schema}


def request(
    system: str,
    user: str = "go",
    *,
    declarations: list[Any] | None = None,
    thinking: bool = False,
) -> dict[str, Any]:
    """A first request as Pi builds it: no thinking asked is ``thinkingBudget: 0``."""
    thinking_config = (
        {"includeThoughts": True, "thinkingBudget": -1} if thinking else {"thinkingBudget": 0}
    )
    return {
        "contents": [{"parts": [{"text": user}], "role": "user"}],
        "systemInstruction": {"parts": [{"text": system}], "role": "user"},
        "tools": [{"functionDeclarations": declarations or [declaration("bash")]}],
        "generationConfig": {"maxOutputTokens": 4096, "thinkingConfig": thinking_config},
    }


def post(server: ScriptedModelServer, body: object, path: str = PATH) -> tuple[int, str, bytes]:
    return post_to(server, body, f"{path}?alt=sse", {"x-goog-api-key": "dummy"})


def events(raw: bytes) -> list[dict[str, Any]]:
    """Every event of a stream: ``data: JSON`` separated by CRLF pairs, nothing else."""
    text = raw.decode("utf-8")
    assert text.endswith("\r\n\r\n")
    chunks = text.split("\r\n\r\n")[:-1]
    assert all(chunk.startswith("data: ") for chunk in chunks)
    return [json.loads(chunk[len("data: ") :]) for chunk in chunks]


def assemble(stream: list[dict[str, Any]]) -> dict[str, Any]:
    """What Pi's adapter rebuilds from the events; asserts the shape it relies on on the way."""
    parts: list[dict[str, Any]] = []
    for position, event in enumerate(stream):
        (candidate,) = event["candidates"]
        assert candidate["content"]["role"] == "model"
        assert ("finishReason" in candidate) == (position == len(stream) - 1)
        assert event["modelVersion"] == MODEL_ID
        assert event["responseId"] == stream[0]["responseId"]
        parts.extend(candidate["content"]["parts"])
    assert stream[-1]["candidates"][0]["finishReason"] == "STOP"
    thoughts = [p for p in parts if p.get("thought") is True]
    texts = [p for p in parts if "text" in p and p.get("thought") is not True]
    calls = [p for p in parts if "functionCall" in p]
    assert parts[: len(thoughts)] == thoughts, "thinking streams first"
    signatures = [p["thoughtSignature"] for p in thoughts if "thoughtSignature" in p]
    text_signatures = [p["thoughtSignature"] for p in texts if "thoughtSignature" in p]
    return {
        "thinking": "".join(p["text"] for p in thoughts),
        "thinking_pieces": len(thoughts),
        "thinking_signature": signatures[-1] if signatures else None,
        "text": "".join(p["text"] for p in texts),
        "text_pieces": len(texts),
        "text_signature": text_signatures[-1] if text_signatures else None,
        "calls": [
            {**p["functionCall"], "thoughtSignature": p.get("thoughtSignature")} for p in calls
        ],
        "usage": stream[-1]["usageMetadata"],
    }


def complete(server: ScriptedModelServer, body: dict[str, Any]) -> dict[str, Any]:
    return assemble(events(wires.event_stream(post(server, body))))


def refusal(server: ScriptedModelServer, body: object, path: str = PATH) -> str:
    """The message of a 400 answered in the Gemini API's error shape."""
    status, content_type, raw = post(server, body, path)
    assert status == 400, raw
    assert content_type.startswith("application/json")
    document = json.loads(raw)
    assert set(document["error"]) == {"code", "message", "status"}
    assert document["error"]["code"] == 400
    assert document["error"]["status"] == "INVALID_ARGUMENT"
    message: str = document["error"]["message"]
    return message


def send_back(body: dict[str, Any], reply: dict[str, Any], results: list[str]) -> None:
    """Append the model turn and the function responses as Pi sends them back."""
    parts: list[dict[str, Any]] = []
    if reply["thinking"]:
        parts.append(
            {
                "thought": True,
                "text": reply["thinking"],
                "thoughtSignature": reply["thinking_signature"],
            }
        )
    if reply["text"]:
        text_part = {"text": reply["text"]}
        if reply["text_signature"]:
            text_part["thoughtSignature"] = reply["text_signature"]
        parts.append(text_part)
    for call in reply["calls"]:
        part: dict[str, Any] = {"functionCall": {"name": call["name"], "args": call["args"]}}
        if call["thoughtSignature"]:
            part["thoughtSignature"] = call["thoughtSignature"]
        parts.append(part)
    body["contents"].append({"parts": parts, "role": "model"})
    if results:
        body["contents"].append(
            {
                "parts": [
                    {"functionResponse": {"name": call["name"], "response": {"output": result}}}
                    for call, result in zip(reply["calls"], results, strict=True)
                ],
                "role": "user",
            }
        )


def calls_of(reply: wires.Reply) -> list[wires.Call]:
    return [wires.Call(c["id"], c["name"], c["args"]) for c in reply["calls"]]


WITH_READER = {"declarations": [declaration("bash"), declaration("squad_spec_read", SPEC_READ)]}
WIRE = wires.Wire("google-generative-ai", request, WITH_READER, post, complete, calls_of, send_back)
