"""The answer of ``google-generative-ai``: a ``streamGenerateContent?alt=sse`` stream, each event
one ``GenerateContentResponse`` as the Gemini API streams it and Pi 0.80.10's adapter reads it.

In order: the thinking (``{"thought": true, "text"}`` parts, a piece per event, the last piece
carrying the block's ``thoughtSignature``), the text (a piece per event), then each call as one
whole ``functionCall`` part ``{"name", "args", "id"}`` in its own event (Gemini never splits a
call's arguments across events, and Pi's adapter takes every ``functionCall`` part for a complete
call). When the turn thought, its signature also rides on the first ``functionCall`` part, else
on the last text piece, where the API puts it for the turn to be replayed. The last event adds
``finishReason: "STOP"`` (also after calls: Gemini has no tool-use finish reason; Pi reads a
call in the message as tool use) and the whole ``usageMetadata``; earlier events carry its
prompt side, as the API's do.

Usage in the API's fields: ``promptTokenCount`` counts the whole prompt, cached part included,
``cachedContentTokenCount`` the part read from the cache, ``candidatesTokenCount`` the answer
without its thinking and ``thoughtsTokenCount`` the thinking. Gemini reports no cache-write
count (its implicit cache writes cost nothing extra, and an explicit cache is written by its own
``cachedContents`` call): the tokens a turn writes to the cache are reported, and billed by Pi,
as plain prompt tokens, so Pi's ``usage.cacheWrite`` is always 0 on this wire.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from adapters.scripted_model.replies import Reply
from adapters.scripted_model.sse import tool_call_id
from adapters.scripted_model.wire.common import Encoded, Turn, pieces, thinking_signature

CONTENT_TYPE = "text/event-stream"
THINKING_PIECE = 32
TEXT_PIECE = 24


def stream(reply: Reply, turn: Turn) -> Encoded:
    signature = thinking_signature(reply.thinking) if reply.thinking else None
    parts = _thought_parts(reply.thinking, signature)
    parts += _text_parts(reply.text, None if reply.tool_calls else signature)
    for position, call in enumerate(reply.tool_calls):
        part: dict[str, Any] = {
            "functionCall": {
                "name": call.name,
                "args": dict(call.arguments),
                "id": tool_call_id(turn.round_number, position),
            }
        }
        if signature is not None and position == 0:
            part["thoughtSignature"] = signature
        parts.append(part)
    if not parts:
        parts.append({"text": ""})
    last = len(parts) - 1
    events = tuple(
        _event(_response(part, turn, final=position == last)) for position, part in enumerate(parts)
    )
    return Encoded(CONTENT_TYPE, events)


def response_id(round_number: int) -> str:
    return f"scripted-gemini-{round_number}"


def usage_metadata(turn: Turn, *, final: bool) -> dict[str, Any]:
    """The ``usageMetadata`` of an event: the prompt side on every one, the answer on the last."""
    usage = turn.usage
    metadata: dict[str, Any] = {"promptTokenCount": usage.prompt}
    total = usage.prompt
    if final:
        metadata["candidatesTokenCount"] = usage.output - usage.reasoning
        total += usage.output
    metadata["totalTokenCount"] = total
    if usage.cache_read:
        metadata["cachedContentTokenCount"] = usage.cache_read
    metadata["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": usage.prompt}]
    if usage.cache_read:
        metadata["cacheTokensDetails"] = [{"modality": "TEXT", "tokenCount": usage.cache_read}]
    if final and usage.reasoning:
        metadata["thoughtsTokenCount"] = usage.reasoning
    return metadata


def _thought_parts(thinking: str, signature: str | None) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [
        {"text": piece, "thought": True} for piece in pieces(thinking, THINKING_PIECE)
    ]
    if parts and signature is not None:
        parts[-1]["thoughtSignature"] = signature
    return parts


def _text_parts(text: str, signature: str | None) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"text": piece} for piece in pieces(text, TEXT_PIECE)]
    if parts and signature is not None:
        parts[-1]["thoughtSignature"] = signature
    return parts


def _response(part: Mapping[str, Any], turn: Turn, *, final: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": [dict(part)], "role": "model"}}
    if final:
        candidate["finishReason"] = "STOP"
    candidate["index"] = 0
    return {
        "candidates": [candidate],
        "usageMetadata": usage_metadata(turn, final=final),
        "modelVersion": turn.model,
        "responseId": response_id(turn.round_number),
    }


def _event(document: Mapping[str, Any]) -> bytes:
    # The API separates its events with CRLF pairs; the SDK splits on those and on LF pairs.
    return f"data: {json.dumps(document, ensure_ascii=False)}\r\n\r\n".encode()
