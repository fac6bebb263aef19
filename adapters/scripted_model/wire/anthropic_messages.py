"""``anthropic-messages``: ``POST /v1/messages`` as Anthropic's Messages API answers it (the
Anthropic SDK in Pi 0.80.10 adds ``/v1/messages`` to a ``baseUrl`` given without ``/v1``).

Pi sends ``system`` as text blocks; ``messages`` alternating ``user`` (a string or text blocks;
tool results as ``tool_result`` blocks, their text joined by ``"\\n"``) and ``assistant``
(``thinking`` blocks with their ``signature``, text, ``tool_use`` blocks with ``input``
objects); ``tools`` as ``{name, description, input_schema: {type: "object", properties,
required}}``; ``thinking`` ``{"type": "enabled", "budget_tokens"}`` when asked to think; always
``stream: true``, so every answer is streamed (see ``anthropic_messages_stream``).

Refused as the API refuses, in its words: a missing ``model``, ``max_tokens`` or ``messages``;
a tool name outside ``^[a-zA-Z0-9_-]{1,128}$``; an ``input_schema`` whose ``type`` is not
``object``; two tools of one name; a thinking budget under 1024 or not under ``max_tokens``; a
``system`` role in ``messages``; empty content or text blocks; a ``tool_use`` id outside
``^[a-zA-Z0-9_-]+$``; a ``tool_result`` answering no ``tool_use`` of the message before; a
``tool_use`` not answered in the message after; with thinking on, a last tool round whose
assistant message does not start with a thinking block; a thinking block whose ``signature``
is not the one this server gave it. Consecutive messages of one role count as one turn, as the
API merges them.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from adapters.scripted_model.conversation import Conversation, Message, ToolCall
from adapters.scripted_model.replies import Reply
from adapters.scripted_model.wire.anthropic_messages_stream import stream_events
from adapters.scripted_model.wire.common import ApiRefusal, Encoded, Turn, signature_matches
from adapters.scripted_model.wire.fixed_paths import AnswersOnPaths

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
TOOL_USE_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
MIN_THINKING_BUDGET = 1024
THINKING_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
_THINKING_BLOCKS = ("thinking", "redacted_thinking")
_ROLE_BLOCKS = {
    "user": ("text", "image", "document", "tool_result"),
    "assistant": ("text", "thinking", "redacted_thinking", "tool_use"),
}
# Each block type's required fields and the Python type the API's schema checks them against.
_FIELDS: dict[str, tuple[tuple[str, type], ...]] = {
    "text": (("text", str),),
    "tool_use": (("id", str), ("name", str), ("input", dict)),
    "tool_result": (("tool_use_id", str),),
    "thinking": (("thinking", str), ("signature", str)),
    "redacted_thinking": (("data", str),),
}
_TYPE_NAMES = {str: "string", dict: "dictionary", int: "integer", list: "list"}

Block = Mapping[str, Any]


@attrs.frozen
class _Sent:
    """One message of the request, its content as blocks (a string is one text block)."""

    position: int
    role: str
    blocks: tuple[Block, ...]


class AnthropicMessages(AnswersOnPaths):
    api = "anthropic-messages"
    paths = ("/v1/messages",)

    def parse(self, body: object, path: str) -> Conversation:
        if not isinstance(body, dict):
            raise ApiRefusal("Input should be a valid dictionary")
        for field in ("model", "max_tokens", "messages"):
            if field not in body:
                raise ApiRefusal(f"{field}: Field required")
        model = _typed(body["model"], str, "model")
        max_tokens = _typed(body["max_tokens"], int, "max_tokens")
        if max_tokens < 1:
            raise ApiRefusal("max_tokens: Input should be greater than or equal to 1")
        reasoning = _asks_thinking(body.get("thinking"), max_tokens)
        tools = _tools(body.get("tools"))
        sent = _messages(body["messages"])
        turns = _turns(sent)
        _check_pairing(turns)
        returned = _returned_thinking(sent)
        if reasoning:
            _check_final_thinking(turns)
        return Conversation(
            model=model,
            stream=body.get("stream") is True,
            messages=(*_system(body.get("system")), *_conversation(sent)),
            tools=tools,
            reasoning=reasoning,
            thinking_returned=returned,
        )

    def encode(self, reply: Reply, turn: Turn) -> Encoded:
        # Pi's adapter always asks for a stream; a request without ``stream`` is streamed too
        # rather than answered in a form no client of this server reads.
        return stream_events(reply, turn)

    def error_document(self, refusal: ApiRefusal) -> dict[str, Any]:
        digest = hashlib.sha256(refusal.message.encode("utf-8")).hexdigest()[:24]
        return {
            "type": "error",
            "error": {"type": refusal.kind, "message": refusal.message},
            "request_id": f"req_scripted_{digest}",
        }


# -- the request's fields ---------------------------------------------------------------------


def _typed(value: object, kind: type, where: str) -> Any:
    # ``bool`` is an ``int`` to Python, never to the API's schema.
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ApiRefusal(f"{where}: Input should be a valid {_TYPE_NAMES[kind]}")
    return value


def _asks_thinking(raw: object, max_tokens: int) -> bool:
    if raw is None:
        return False
    thinking = _typed(raw, dict, "thinking")
    kind = thinking.get("type")
    if kind == "disabled":
        return False
    if kind == "adaptive":
        return True
    if kind != "enabled":
        raise ApiRefusal(
            f"thinking: Input tag '{kind}' found using 'type' does not match any of the "
            "expected tags: 'enabled', 'disabled', 'adaptive'"
        )
    if "budget_tokens" not in thinking:
        raise ApiRefusal("thinking.enabled.budget_tokens: Field required")
    budget = _typed(thinking["budget_tokens"], int, "thinking.enabled.budget_tokens")
    if budget < MIN_THINKING_BUDGET:
        raise ApiRefusal(
            "thinking.enabled.budget_tokens: Input should be greater than or equal to "
            f"{MIN_THINKING_BUDGET}"
        )
    if max_tokens <= budget:
        raise ApiRefusal(
            "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
            f"documentation at {THINKING_DOCS}#max-tokens-and-context-window-size"
        )
    return True


def _tools(raw: object) -> dict[str, Mapping[str, Any]]:
    if raw is None:
        return {}
    tools: dict[str, Mapping[str, Any]] = {}
    for position, item in enumerate(_typed(raw, list, "tools")):
        tool = _typed(item, dict, f"tools.{position}")
        if tool.get("type") not in (None, "custom"):
            continue  # a server tool (``web_search_...``): the API runs it, no schema to fill
        where = f"tools.{position}.custom"
        for field in ("name", "input_schema"):
            if field not in tool:
                raise ApiRefusal(f"{where}.{field}: Field required")
        name = _typed(tool["name"], str, f"{where}.name")
        if not TOOL_NAME.match(name):
            raise ApiRefusal(f"{where}.name: String should match pattern '{TOOL_NAME.pattern}'")
        schema = _typed(tool["input_schema"], dict, f"{where}.input_schema")
        if schema.get("type") != "object":
            raise ApiRefusal(f"{where}.input_schema.type: Input should be 'object'")
        if name in tools:
            raise ApiRefusal("tools: Tool names must be unique.")
        tools[name] = schema
    return tools


def _system(raw: object) -> tuple[Message, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str):
        text = raw
    else:
        blocks = _typed(raw, list, "system")
        texts = []
        for slot, block in enumerate(blocks):
            if not isinstance(block, dict) or block.get("type") != "text":
                raise ApiRefusal(f"system.{slot}.type: Input should be 'text'")
            texts.append(_typed(block.get("text"), str, f"system.{slot}.text"))
        text = "\n".join(texts)
    return (Message(role="system", text=text, round=0),) if text else ()


# -- messages ---------------------------------------------------------------------------------


def _messages(raw: object) -> list[_Sent]:
    items = _typed(raw, list, "messages")
    if not items:
        raise ApiRefusal("messages: at least one message is required")
    sent: list[_Sent] = []
    for position, item in enumerate(items):
        message = _typed(item, dict, f"messages.{position}")
        role = message.get("role")
        if role is None:
            raise ApiRefusal(f"messages.{position}.role: Field required")
        if role == "system":
            raise ApiRefusal(
                'messages: Unexpected role "system". The Messages API accepts a top-level '
                '`system` parameter, not "system" as an input message role.'
            )
        if role not in _ROLE_BLOCKS:
            raise ApiRefusal(f"messages.{position}.role: Input should be 'user' or 'assistant'")
        if "content" not in message:
            raise ApiRefusal(f"messages.{position}.content: Field required")
        content = message["content"]
        raw_blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        blocks = _typed(raw_blocks, list, f"messages.{position}.content")
        final_assistant = role == "assistant" and position == len(items) - 1
        if not blocks or content == "":
            if not final_assistant:
                raise ApiRefusal(
                    f"messages.{position}: all messages must have non-empty content except for "
                    "the optional final assistant message"
                )
            blocks = []
        checked = tuple(
            _block(block, role, f"messages.{position}.content.{slot}")
            for slot, block in enumerate(blocks)
        )
        sent.append(_Sent(position, role, checked))
    return sent


def _block(raw: object, role: str, where: str) -> Block:
    block: dict[str, Any] = _typed(raw, dict, where)
    kind = block.get("type")
    if not isinstance(kind, str):
        raise ApiRefusal(f"{where}: Unable to extract tag using discriminator 'type'")
    if kind not in _ROLE_BLOCKS[role]:
        other = next((r for r, kinds in _ROLE_BLOCKS.items() if kind in kinds), None)
        if other is None:
            expected = ", ".join(f"'{k}'" for k in _ROLE_BLOCKS[role])
            raise ApiRefusal(
                f"{where}: Input tag '{kind}' found using 'type' does not match any of the "
                f"expected tags: {expected}"
            )
        raise ApiRefusal(f"{where}: `{kind}` blocks can only be in `{other}` messages")
    for field, field_type in _FIELDS.get(kind, ()):
        if field not in block:
            raise ApiRefusal(f"{where}.{kind}.{field}: Field required")
        _typed(block[field], field_type, f"{where}.{kind}.{field}")
    if kind == "text" and not block["text"]:
        raise ApiRefusal("messages: text content blocks must be non-empty")
    if kind == "text" and not block["text"].strip():
        raise ApiRefusal("messages: text content blocks must contain non-whitespace text")
    if kind == "tool_use" and not TOOL_USE_ID.match(block["id"]):
        raise ApiRefusal(
            f"{where}.tool_use.id: String should match pattern '{TOOL_USE_ID.pattern}'"
        )
    return block


def _turns(sent: Sequence[_Sent]) -> list[list[_Sent]]:
    """The messages grouped into turns: consecutive messages of one role are one turn."""
    turns: list[list[_Sent]] = []
    for message in sent:
        if turns and turns[-1][0].role == message.role:
            turns[-1].append(message)
        else:
            turns.append([message])
    return turns


def _of(turn: Sequence[_Sent], kind: str) -> list[tuple[_Sent, int, Block]]:
    return [
        (message, slot, block)
        for message in turn
        for slot, block in enumerate(message.blocks)
        if block["type"] == kind
    ]


def _check_pairing(turns: list[list[_Sent]]) -> None:
    """Every ``tool_use`` is answered by a ``tool_result`` in the turn right after it, and every
    ``tool_result`` answers a ``tool_use`` of the turn right before it."""
    for number, turn in enumerate(turns):
        if turn[0].role == "assistant":
            uses = _of(turn, "tool_use")
            following = turns[number + 1] if number + 1 < len(turns) else []
            answered = {block["tool_use_id"] for _, _, block in _of(following, "tool_result")}
            missing = [block["id"] for _, _, block in uses if block["id"] not in answered]
            if missing:
                position = next(m.position for m, _, b in uses if b["id"] == missing[0])
                raise ApiRefusal(
                    f"messages.{position}: `tool_use` ids were found without `tool_result` "
                    f"blocks immediately after: {', '.join(missing)}. Each `tool_use` block "
                    "must have a corresponding `tool_result` block in the next message."
                )
            continue
        previous = turns[number - 1] if number else []
        offered = {block["id"] for _, _, block in _of(previous, "tool_use")}
        for message, slot, block in _of(turn, "tool_result"):
            if block["tool_use_id"] not in offered:
                raise ApiRefusal(
                    f"messages.{message.position}.content.{slot}: unexpected `tool_use_id` "
                    f"found in `tool_result` blocks: {block['tool_use_id']}. Each "
                    "`tool_result` block must have a corresponding `tool_use` block in the "
                    "previous message."
                )


def _check_final_thinking(turns: list[list[_Sent]]) -> None:
    """With thinking on, the assistant turn whose tool calls the last user turn answers must
    open with its thinking: the model continues that turn and needs its reasoning."""
    if len(turns) < 2 or turns[-1][0].role != "user" or not _of(turns[-1], "tool_result"):
        return
    opening = turns[-2][0]
    found = opening.blocks[0]["type"] if opening.blocks else "nothing"
    if found not in _THINKING_BLOCKS:
        raise ApiRefusal(
            f"messages.{opening.position}.content.0.type: Expected `thinking` or "
            f"`redacted_thinking`, but found `{found}`. When `thinking` is enabled, a final "
            "`assistant` message must start with a thinking block (preceeding the lastmost set "
            "of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks "
            "from previous turns. To avoid this requirement, disable `thinking`. Please "
            f"consult our documentation at {THINKING_DOCS}"
        )


def _returned_thinking(sent: Sequence[_Sent]) -> int:
    """How many thinking blocks came back, each checked against the signature it was given
    (this server never gives redacted thinking, so none can come back)."""
    returned = 0
    for message in sent:
        for slot, block in enumerate(message.blocks):
            where = f"messages.{message.position}.content.{slot}"
            if block["type"] == "thinking":
                if not signature_matches(block["thinking"], block["signature"]):
                    raise ApiRefusal(f"{where}: Invalid `signature` in `thinking` block")
                returned += 1
            elif block["type"] == "redacted_thinking":
                raise ApiRefusal(f"{where}: Invalid `data` in `redacted_thinking` block")
    return returned


# -- the protocol-neutral conversation --------------------------------------------------------


def _conversation(sent: Sequence[_Sent]) -> list[Message]:
    """User turns become a ``tool`` message per ``tool_result`` and a ``user`` message of their
    text; ``round`` counts the assistant messages so far, as ``conversation.parse_request``."""
    messages: list[Message] = []
    rounds = 0
    for message in sent:
        texts = [block["text"] for block in message.blocks if block["type"] == "text"]
        if message.role == "assistant":
            rounds += 1
            calls = tuple(
                _tool_call(block) for block in message.blocks if block["type"] == "tool_use"
            )
            messages.append(Message("assistant", "\n".join(texts), rounds, tool_calls=calls))
            continue
        results = [block for block in message.blocks if block["type"] == "tool_result"]
        messages.extend(
            Message(
                "tool",
                _result_text(block.get("content")),
                rounds,
                tool_call_id=block["tool_use_id"],
            )
            for block in results
        )
        if texts or not results:
            messages.append(Message("user", "\n".join(texts), rounds))
    return messages


def _tool_call(block: Block) -> ToolCall:
    arguments = dict(block["input"])
    raw = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    return ToolCall(id=block["id"], name=block["name"], arguments=arguments, raw_arguments=raw)


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"]
            for part in content
            if isinstance(part, dict)
            and part.get("type") == "text"
            and isinstance(part.get("text"), str)
        )
    return ""
