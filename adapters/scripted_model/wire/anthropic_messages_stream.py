"""The Server-Sent Events of one Anthropic Messages answer, as the real API streams them and
Pi 0.80.10's ``anthropic-messages`` adapter reads them.

``message_start`` (the prompt's usage: ``input_tokens`` without the cached parts, then
``cache_creation_input_tokens`` and ``cache_read_input_tokens``), a ``ping``, then one content
block after another, each ``content_block_start`` / ``content_block_delta``... /
``content_block_stop``: the thinking first (``thinking_delta`` pieces, then one
``signature_delta``), the text (``text_delta`` pieces), each tool call (``input_json_delta``
pieces of its arguments, opened by an empty one). ``message_delta`` closes the answer with its
``stop_reason`` (``tool_use`` or ``end_turn``) and the whole usage, ``message_stop`` ends it.
"""

from __future__ import annotations

import json
from typing import Any

from adapters.scripted_model.replies import PlannedCall, Reply
from adapters.scripted_model.sse import argument_pieces
from adapters.scripted_model.wire.common import (
    Encoded,
    Turn,
    pieces,
    sse_event,
    thinking_signature,
)

CONTENT_TYPE = "text/event-stream; charset=utf-8"
TEXT_PIECE = 24
THINKING_PIECE = 32


def message_id(round_number: int) -> str:
    return f"msg_scripted_{round_number}"


def tool_use_id(round_number: int, position: int) -> str:
    """Deterministic, unique within a conversation, and inside the API's id pattern."""
    return f"toolu_scripted_{round_number}_{position}"


def stream_events(reply: Reply, turn: Turn) -> Encoded:
    usage = turn.usage
    opening_usage = {
        "input_tokens": usage.input,
        "cache_creation_input_tokens": usage.cache_write,
        "cache_read_input_tokens": usage.cache_read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": usage.cache_write,
            "ephemeral_1h_input_tokens": 0,
        },
        # The API reports a token or so here and the whole count in ``message_delta``.
        "output_tokens": 1,
        "service_tier": "standard",
    }
    events = [
        _event(
            "message_start",
            message={
                "id": message_id(turn.round_number),
                "type": "message",
                "role": "assistant",
                "model": turn.model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": opening_usage,
            },
        ),
        sse_event({"type": "ping"}, "ping"),
    ]
    blocks: list[list[bytes]] = []
    if reply.thinking:
        blocks.append(_thinking_block(len(blocks), reply.thinking))
    if reply.text:
        blocks.append(_text_block(len(blocks), reply.text))
    for position, call in enumerate(reply.tool_calls):
        blocks.append(_tool_use_block(len(blocks), call, tool_use_id(turn.round_number, position)))
    for block in blocks:
        events.extend(block)
    events.append(
        _event(
            "message_delta",
            delta={
                "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
                "stop_sequence": None,
            },
            usage={
                "input_tokens": usage.input,
                "cache_creation_input_tokens": usage.cache_write,
                "cache_read_input_tokens": usage.cache_read,
                "output_tokens": usage.output,
                "output_tokens_details": {"thinking_tokens": usage.reasoning},
            },
        )
    )
    events.append(_event("message_stop"))
    return Encoded(CONTENT_TYPE, tuple(events))


def _thinking_block(index: int, thinking: str) -> list[bytes]:
    deltas = [{"type": "thinking_delta", "thinking": p} for p in pieces(thinking, THINKING_PIECE)]
    deltas.append({"type": "signature_delta", "signature": thinking_signature(thinking)})
    return _block(index, {"type": "thinking", "thinking": "", "signature": ""}, deltas)


def _text_block(index: int, text: str) -> list[bytes]:
    deltas = [{"type": "text_delta", "text": piece} for piece in pieces(text, TEXT_PIECE)]
    return _block(index, {"type": "text", "text": ""}, deltas)


def _tool_use_block(index: int, call: PlannedCall, call_id: str) -> list[bytes]:
    arguments = json.dumps(dict(call.arguments), ensure_ascii=False) if call.arguments else ""
    deltas = [
        {"type": "input_json_delta", "partial_json": piece}
        for piece in ["", *argument_pieces(arguments)]
    ]
    start = {"type": "tool_use", "id": call_id, "name": call.name, "input": {}}
    return _block(index, start, deltas)


def _block(index: int, start: dict[str, Any], deltas: list[dict[str, Any]]) -> list[bytes]:
    return [
        _event("content_block_start", index=index, content_block=start),
        *(_event("content_block_delta", index=index, delta=delta) for delta in deltas),
        _event("content_block_stop", index=index),
    ]


def _event(kind: str, **fields: Any) -> bytes:
    return sse_event({"type": kind, **fields}, kind)
