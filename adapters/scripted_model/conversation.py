"""A typed, read-only view of one chat-completions request as Pi 0.80.10 sends it.

Pi's ``openai-completions`` provider sends ``messages`` as: one ``system`` message (Pi's system
prompt plus anything appended with ``--append-system-prompt`` or by ``before_agent_start``), then
``user`` messages (content a string or a list of ``{"type": "text", "text"}`` parts),
``assistant`` messages (``content`` a string or null, ``tool_calls`` with JSON-string
``arguments``) and ``tool`` messages (``tool_call_id`` and ``content``: the result's text blocks
joined by ``"\\n"``; a blocked or failed call arrives as its plain reason text). ``tools`` lists
``{"type": "function", "function": {"name", "description", "parameters"}}``.

Nothing here trusts the request: every field is read defensively, and a malformed request is a
``RequestInvalid`` the server answers with HTTP 400.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

import attrs


class RequestInvalid(ValueError):
    """The request body is not a chat-completions request this server can answer."""


@attrs.frozen
class ToolCall:
    """A tool call made by an earlier assistant message."""

    id: str
    name: str
    arguments: Mapping[str, Any]
    raw_arguments: str


@attrs.frozen
class Message:
    """One message of the conversation; ``round`` is the number of assistant messages before it
    (for an assistant message: including itself), so a tool result shares its call's round."""

    role: str
    text: str
    round: int
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None


@attrs.frozen
class Conversation:
    model: str
    stream: bool
    messages: tuple[Message, ...]
    tools: Mapping[str, Mapping[str, Any]]
    """Offered tool name -> its JSON Schema ``parameters``, as the provider received it."""
    reasoning: bool = False
    """The request asks the model to think before it answers."""
    thinking_returned: int = 0
    """Thinking blocks of earlier turns sent back (each checked against its signature)."""

    @property
    def system(self) -> str:
        return "\n".join(m.text for m in self.messages if m.role in ("system", "developer"))

    @property
    def rounds(self) -> int:
        """How many assistant messages the conversation already holds."""
        return sum(1 for m in self.messages if m.role == "assistant")

    def offers(self, tool: str) -> bool:
        return tool in self.tools

    def by_role(self, *roles: str) -> Iterator[Message]:
        return (m for m in self.messages if m.role in roles)

    def last_user_text(self) -> str:
        texts = [m.text for m in self.messages if m.role == "user"]
        return texts[-1] if texts else ""

    def calls(self, name: str | None = None) -> Iterator[tuple[Message, ToolCall]]:
        """Every earlier tool call (optionally of one tool) with the assistant message making it."""
        for message in self.messages:
            for call in message.tool_calls:
                if name is None or call.name == name:
                    yield message, call

    def result_for(self, call_id: str) -> Message | None:
        for message in self.messages:
            if message.role == "tool" and message.tool_call_id == call_id:
                return message
        return None

    def marker(self, key: str) -> str | None:
        """The value of the last ``key: value`` line in the system prompt, else in user messages.

        Markers are the contract between the squad (agent prompts, bootstrap) and this model.
        Tool results are not searched: they carry spec text, which must not steer the model.
        """
        pattern = marker_pattern(key)
        for roles in (("system", "developer"), ("user",)):
            found: str | None = None
            for message in self.by_role(*roles):
                for match in pattern.finditer(message.text):
                    found = match.group(1).strip()
            if found is not None:
                return found
        return None


def marker_pattern(key: str) -> re.Pattern[str]:
    return re.compile(rf"^[ \t]*{re.escape(key)}[ \t]*:[ \t]*(.*?)[ \t]*$", re.MULTILINE)


def parse_request(body: object) -> Conversation:
    if not isinstance(body, dict):
        raise RequestInvalid("the request body must be a JSON object")
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        raise RequestInvalid("'messages' must be a non-empty list")
    messages: list[Message] = []
    rounds = 0
    for position, raw in enumerate(raw_messages):
        if not isinstance(raw, dict) or not isinstance(raw.get("role"), str):
            raise RequestInvalid(f"messages[{position}] must be an object with a string 'role'")
        role = raw["role"]
        calls = _tool_calls(raw.get("tool_calls"), position) if role == "assistant" else ()
        if role == "assistant":
            rounds += 1
        call_id = raw.get("tool_call_id")
        messages.append(
            Message(
                role=role,
                text=_text(raw.get("content")),
                round=rounds,
                tool_calls=calls,
                tool_call_id=call_id if isinstance(call_id, str) else None,
            )
        )
    model = body.get("model")
    return Conversation(
        model=model if isinstance(model, str) else "",
        stream=body.get("stream") is True,
        messages=tuple(messages),
        tools=_tools(body.get("tools")),
    )


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        ]
        return "\n".join(parts)
    return ""


def _tool_calls(raw: object, position: int) -> tuple[ToolCall, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise RequestInvalid(f"messages[{position}].tool_calls must be a list")
    calls: list[ToolCall] = []
    for item in raw:
        function = item.get("function") if isinstance(item, dict) else None
        if not isinstance(item, dict) or not isinstance(function, dict):
            raise RequestInvalid(f"messages[{position}].tool_calls holds a malformed call")
        raw_arguments = function.get("arguments")
        raw_arguments = raw_arguments if isinstance(raw_arguments, str) else ""
        try:
            decoded = json.loads(raw_arguments) if raw_arguments else {}
        except json.JSONDecodeError:
            decoded = {}
        calls.append(
            ToolCall(
                id=str(item.get("id", "")),
                name=str(function.get("name", "")),
                arguments=decoded if isinstance(decoded, dict) else {},
                raw_arguments=raw_arguments,
            )
        )
    return tuple(calls)


def _tools(raw: object) -> dict[str, Mapping[str, Any]]:
    tools: dict[str, Mapping[str, Any]] = {}
    if not isinstance(raw, list):
        return tools
    for item in raw:
        function = item.get("function") if isinstance(item, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            parameters = function.get("parameters")
            tools[function["name"]] = parameters if isinstance(parameters, dict) else {}
    return tools
