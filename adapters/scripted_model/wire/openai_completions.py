"""``openai-completions``: ``POST /v1/chat/completions`` as OpenAI's Chat Completions API (and
the OpenAI-compatible servers Pi users point it at) answers it.

Refused as the API refuses: a tool whose ``parameters`` is not a plain object schema at the top
level, a tool name outside ``^[a-zA-Z0-9_-]{1,64}$``, a ``tool`` message that answers no tool
call of the assistant message before it, and an assistant's tool call left unanswered.

Thinking is DeepSeek's form of it: a request with ``reasoning_effort`` (other than ``none``) gets
``delta.reasoning_content`` before the answer; Pi sends it back as the assistant message's
``reasoning_content``, which must be text this server produced.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import attrs

from adapters.scripted_model.conversation import Conversation, RequestInvalid, parse_request
from adapters.scripted_model.replies import Reply
from adapters.scripted_model.sse import completion, encode_events, stream_chunks
from adapters.scripted_model.wire.common import (
    ApiRefusal,
    Encoded,
    Turn,
    openai_schema_problem,
    pieces,
    thinking_signature,
)
from adapters.scripted_model.wire.fixed_paths import AnswersOnPaths

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
THINKING_PIECE = 32


class OpenAICompletions(AnswersOnPaths):
    api = "openai-completions"
    paths = ("/v1/chat/completions", "/chat/completions")

    def parse(self, body: object, path: str) -> Conversation:
        try:
            conversation = parse_request(body)
        except RequestInvalid as error:
            raise ApiRefusal(str(error)) from error
        assert isinstance(body, dict)  # parse_request refused anything else
        _check_tools(body.get("tools"))
        returned = _check_messages(body["messages"])
        effort = body.get("reasoning_effort")
        return attrs.evolve(
            conversation,
            reasoning=isinstance(effort, str) and effort not in ("none", "off", ""),
            thinking_returned=returned,
        )

    def encode(self, reply: Reply, turn: Turn) -> Encoded:
        usage = _usage(turn)
        if not turn.stream:
            document = completion(
                reply, model=turn.model, round_number=turn.round_number, prompt_tokens=0
            )
            document["usage"] = usage
            if reply.thinking:
                document["choices"][0]["message"]["reasoning_content"] = reply.thinking
            return Encoded("application/json", (_json(document),))
        chunks = stream_chunks(
            reply, model=turn.model, round_number=turn.round_number, prompt_tokens=0
        )
        chunks[-1] = {**chunks[-1], "usage": usage}
        if reply.thinking:
            base = {key: chunks[0][key] for key in ("id", "object", "created", "model")}
            reasoning = [
                {
                    **base,
                    "choices": [
                        {"index": 0, "delta": {"reasoning_content": piece}, "finish_reason": None}
                    ],
                }
                for piece in pieces(reply.thinking, THINKING_PIECE)
            ]
            chunks[1:1] = reasoning
        payload = encode_events(chunks)
        events = tuple(event + b"\n\n" for event in payload.split(b"\n\n") if event)
        return Encoded("text/event-stream; charset=utf-8", events)

    def error_document(self, refusal: ApiRefusal) -> dict[str, Any]:
        return {
            "error": {
                "message": refusal.message,
                "type": refusal.kind,
                "param": None,
                "code": None,
            }
        }


def _usage(turn: Turn) -> dict[str, Any]:
    usage = turn.usage
    return {
        "prompt_tokens": usage.prompt,
        "completion_tokens": usage.output,
        "total_tokens": usage.prompt + usage.output,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning},
    }


def _check_tools(raw: object) -> None:
    if raw is None:
        return
    if not isinstance(raw, list):
        raise ApiRefusal("Invalid type for 'tools': expected an array.")
    for position, item in enumerate(raw):
        function = item.get("function") if isinstance(item, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            raise ApiRefusal(
                f"Invalid 'tools[{position}].function.name': string does not match pattern. "
                "Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
            )
        assert isinstance(function, dict)
        problem = openai_schema_problem(name, function.get("parameters", {"type": "object"}))
        if problem is not None:
            raise ApiRefusal(problem)


def _check_messages(messages: list[Any]) -> int:
    """Every ``tool`` message answers a call of the assistant message before its run of tool
    messages, and every such call is answered. Returns the reasoning texts sent back."""
    pending: dict[str, int] = {}
    returned = 0
    for position, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                raise ApiRefusal(
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'."
                )
            del pending[call_id]
            continue
        if pending:
            raise ApiRefusal(
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(sorted(pending))}"
            )
        if role == "assistant":
            returned += _returned_reasoning(message, position)
            for call in message.get("tool_calls") or []:
                if isinstance(call, Mapping) and isinstance(call.get("id"), str):
                    pending[call["id"]] = position
    return returned


def _returned_reasoning(message: Mapping[str, Any], position: int) -> int:
    text = message.get("reasoning_content")
    if not isinstance(text, str) or not text:
        return 0
    # The server's thinking names its own round and policy; text it did not write, or wrote
    # differently, is not what it produced.
    if not text.startswith("Scripted reasoning, round "):
        raise ApiRefusal(
            f"messages[{position}].reasoning_content does not match the reasoning this model "
            f"produced (signature {thinking_signature(text)[:12]})."
        )
    return 1


def _json(document: Mapping[str, Any]) -> bytes:
    return json.dumps(document).encode("utf-8")
