"""Encoding a reply as OpenAI chat-completions chunks (Server-Sent Events) or one completion.

The stream Pi 0.80.10 understands: a first chunk with ``delta.role``; text as ``delta.content``
pieces; each tool call as ``delta.tool_calls[{index, id, type, function: {name, arguments: ""}}]``
followed by ``function.arguments`` pieces; a chunk with an empty delta and ``finish_reason``
(``tool_calls`` or ``stop``); a usage chunk with empty ``choices``; then ``data: [DONE]``.
"""

from __future__ import annotations

import json
from typing import Any

from adapters.scripted_model.replies import Reply

CREATED = 1_700_000_000
"""A fixed ``created`` stamp: the same request always yields the same bytes."""
TEXT_PIECE = 24
ARGUMENT_PIECE = 16
# Pi re-parses a tool call's whole partial JSON at every piece, so its work grows with the
# square of the pieces: an argument longer than this many pieces streams in fewer, larger ones
# (a 200 KB argument in 391-byte pieces, still measured as it grows).
MAX_ARGUMENT_PIECES = 512


def tool_call_id(round_number: int, position: int) -> str:
    """Deterministic and unique within a conversation: the assistant round and the call's slot."""
    return f"call_{round_number}_{position}"


def completion_id(round_number: int) -> str:
    return f"chatcmpl-scripted-{round_number}"


def stream_chunks(
    reply: Reply, *, model: str, round_number: int, prompt_tokens: int
) -> list[dict[str, Any]]:
    """The chunk objects, in order, for a reply given as the assistant's ``round_number``-th."""
    base: dict[str, Any] = {
        "id": completion_id(round_number),
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks.extend(chunk({"content": piece}) for piece in _pieces(reply.text, TEXT_PIECE))
    for position, call in enumerate(reply.tool_calls):
        chunks.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": position,
                            "id": tool_call_id(round_number, position),
                            "type": "function",
                            "function": {"name": call.name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        arguments = json.dumps(dict(call.arguments), ensure_ascii=False)
        chunks.extend(
            chunk({"tool_calls": [{"index": position, "function": {"arguments": piece}}]})
            for piece in argument_pieces(arguments)
        )
    chunks.append(chunk({}, "tool_calls" if reply.tool_calls else "stop"))
    chunks.append({**base, "choices": [], "usage": usage(reply, prompt_tokens)})
    return chunks


def encode_events(chunks: list[dict[str, Any]]) -> bytes:
    events = [f"data: {json.dumps(c, ensure_ascii=False)}\n\n" for c in chunks]
    events.append("data: [DONE]\n\n")
    return "".join(events).encode("utf-8")


def completion(
    reply: Reply, *, model: str, round_number: int, prompt_tokens: int
) -> dict[str, Any]:
    """The same reply as one non-streaming ``chat.completion`` object."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": tool_call_id(round_number, position),
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": json.dumps(dict(call.arguments), ensure_ascii=False),
                },
            }
            for position, call in enumerate(reply.tool_calls)
        ]
    return {
        "id": completion_id(round_number),
        "object": "chat.completion",
        "created": CREATED,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
        "usage": usage(reply, prompt_tokens),
    }


def usage(reply: Reply, prompt_tokens: int) -> dict[str, int]:
    produced = len(reply.text) + sum(
        len(call.name) + len(json.dumps(dict(call.arguments))) for call in reply.tool_calls
    )
    completion_tokens = max(1, produced // 4)
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def argument_pieces(arguments: str) -> list[str]:
    """A tool call's arguments as the stream carries them: 16-character pieces, at most
    ``MAX_ARGUMENT_PIECES`` of them."""
    size = max(ARGUMENT_PIECE, -(-len(arguments) // MAX_ARGUMENT_PIECES))
    return _pieces(arguments, size)


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]
