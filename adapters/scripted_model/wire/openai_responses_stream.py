"""The event stream of ``POST /v1/responses`` with ``stream: true``, as OpenAI's Responses API
sends it and Pi 0.80.10's ``processResponsesStream`` reads it.

Every event is ``event: TYPE`` plus ``data: {"type": TYPE, "sequence_number": N, ...}``; there is
no ``[DONE]``: ``response.completed`` ends the stream. In order: ``response.created`` and
``response.in_progress`` (the response with no output yet), then one output item after another,
each opened by ``response.output_item.added`` and closed by ``response.output_item.done``:

- the reasoning item first, when the reply has thinking: its summary streamed as
  ``response.reasoning_summary_text.delta`` pieces between ``reasoning_summary_part.added`` and
  ``.done``, and ``encrypted_content`` (asked for by Pi's ``include:
  ['reasoning.encrypted_content']``) carrying ``thinking_signature`` of the summary; Pi keeps the
  whole done item and sends it back as is;
- the message item (``output_text`` deltas inside ``content_part.added`` / ``.done``);
- one ``function_call`` item per call, its arguments as
  ``response.function_call_arguments.delta`` pieces, then ``.done`` with all of them;

then ``response.completed`` with every item and the usage. The API has no stop reason: status is
``completed`` either way, and Pi reads tool use from the ``function_call`` items it saw.

Usage is in the API's fields: ``input_tokens`` counts the whole prompt, cached parts included;
``input_tokens_details.cached_tokens`` the part read from the prompt cache;
``output_tokens_details.reasoning_tokens`` the thinking share of ``output_tokens``. OpenAI's own
API reports no cache writes (its caching writes for free); ``input_tokens_details.
cache_write_tokens`` is the field Azure OpenAI's Responses API adds for them, and the one Pi's
adapter subtracts from ``input_tokens`` into ``cacheWrite``, so it is sent too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from adapters.scripted_model.replies import PlannedCall, Reply
from adapters.scripted_model.sse import CREATED, TEXT_PIECE, argument_pieces, tool_call_id
from adapters.scripted_model.wire.common import (
    Encoded,
    Turn,
    pieces,
    sse_event,
    thinking_signature,
)

THINKING_PIECE = 32
CONTENT_TYPE = "text/event-stream; charset=utf-8"

Event = tuple[str, dict[str, Any]]
"""An event's type and its fields other than ``type`` and ``sequence_number``."""


def response_id(round_number: int) -> str:
    return f"resp_scripted_{round_number}"


def reasoning_id(round_number: int) -> str:
    return f"rs_scripted_{round_number}"


def message_id(round_number: int) -> str:
    return f"msg_scripted_{round_number}"


def function_item_id(round_number: int, position: int) -> str:
    """The ``function_call`` item's own id (``fc`` prefixed, as the API's are); the call is
    named by its ``call_id``, shared with Chat Completions' ``call_ROUND_POSITION``."""
    return f"fc_scripted_{round_number}_{position}"


def encode_stream(reply: Reply, turn: Turn) -> Encoded:
    output: list[dict[str, Any]] = []
    events: list[Event] = [
        ("response.created", {"response": _response(turn, "in_progress", [])}),
        ("response.in_progress", {"response": _response(turn, "in_progress", [])}),
    ]
    if reply.thinking:
        events.extend(_reasoning(reply.thinking, turn.round_number, len(output), output))
    if reply.text or not reply.tool_calls:
        events.extend(_message(reply.text, turn.round_number, len(output), output))
    for position, call in enumerate(reply.tool_calls):
        events.extend(_function_call(call, turn.round_number, position, len(output), output))
    events.append(("response.completed", {"response": _response(turn, "completed", output)}))
    encoded = tuple(
        sse_event({"type": kind, "sequence_number": number, **fields}, kind)
        for number, (kind, fields) in enumerate(events)
    )
    return Encoded(CONTENT_TYPE, encoded)


def _response(turn: Turn, status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": response_id(turn.round_number),
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "model": turn.model,
        "output": list(output),
        "parallel_tool_calls": True,
        "usage": _usage(turn) if status == "completed" else None,
    }


def _usage(turn: Turn) -> dict[str, Any]:
    usage = turn.usage
    return {
        "input_tokens": usage.prompt,
        "input_tokens_details": {
            "cached_tokens": usage.cache_read,
            "cache_write_tokens": usage.cache_write,
        },
        "output_tokens": usage.output,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning},
        "total_tokens": usage.prompt + usage.output,
    }


def _reasoning(
    text: str, round_number: int, index: int, output: list[dict[str, Any]]
) -> Iterator[Event]:
    item_id = reasoning_id(round_number)
    signature = thinking_signature(text)
    where = {"item_id": item_id, "output_index": index, "summary_index": 0}
    yield (
        "response.output_item.added",
        {
            "output_index": index,
            "item": {
                "id": item_id,
                "type": "reasoning",
                "encrypted_content": signature,
                "summary": [],
            },
        },
    )
    yield (
        "response.reasoning_summary_part.added",
        {**where, "part": {"type": "summary_text", "text": ""}},
    )
    for piece in pieces(text, THINKING_PIECE):
        yield "response.reasoning_summary_text.delta", {**where, "delta": piece}
    yield "response.reasoning_summary_text.done", {**where, "text": text}
    yield (
        "response.reasoning_summary_part.done",
        {**where, "part": {"type": "summary_text", "text": text}},
    )
    item = {
        "id": item_id,
        "type": "reasoning",
        "encrypted_content": signature,
        "summary": [{"type": "summary_text", "text": text}],
    }
    output.append(item)
    yield "response.output_item.done", {"output_index": index, "item": item}


def _message(
    text: str, round_number: int, index: int, output: list[dict[str, Any]]
) -> Iterator[Event]:
    item_id = message_id(round_number)
    where = {"item_id": item_id, "output_index": index, "content_index": 0}
    opened = {"id": item_id, "type": "message", "status": "in_progress", "role": "assistant"}
    yield "response.output_item.added", {"output_index": index, "item": {**opened, "content": []}}
    empty = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
    yield "response.content_part.added", {**where, "part": empty}
    for piece in pieces(text, TEXT_PIECE):
        yield "response.output_text.delta", {**where, "delta": piece, "logprobs": []}
    yield "response.output_text.done", {**where, "text": text, "logprobs": []}
    part = {**empty, "text": text}
    yield "response.content_part.done", {**where, "part": part}
    item = {**opened, "status": "completed", "content": [part]}
    output.append(item)
    yield "response.output_item.done", {"output_index": index, "item": item}


def _function_call(
    call: PlannedCall, round_number: int, position: int, index: int, output: list[dict[str, Any]]
) -> Iterator[Event]:
    item_id = function_item_id(round_number, position)
    arguments = json.dumps(dict(call.arguments), ensure_ascii=False)
    opened = {
        "id": item_id,
        "type": "function_call",
        "status": "in_progress",
        "arguments": "",
        "call_id": tool_call_id(round_number, position),
        "name": call.name,
    }
    yield "response.output_item.added", {"output_index": index, "item": opened}
    where = {"item_id": item_id, "output_index": index}
    for piece in argument_pieces(arguments):
        yield "response.function_call_arguments.delta", {**where, "delta": piece}
    yield "response.function_call_arguments.done", {**where, "arguments": arguments}
    item = {**opened, "status": "completed", "arguments": arguments}
    output.append(item)
    yield "response.output_item.done", {"output_index": index, "item": item}
