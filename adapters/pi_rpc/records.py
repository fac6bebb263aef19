"""Reading Pi's RPC records into the parent's child events (reference/pi-runtime.md).

Pure functions over one decoded record: what the assistant said and spent, which tools it asked
for with the arguments *as the model sent them* (before Pi's coercion: grounding depends on
that), what each finalised tool result carried, and the session a ``get_state`` answer binds.
Anything of an unexpected shape reads as empty rather than failing the reader thread.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from application.ports import AssistantText, RequestedCall, ToolResultSeen


def text_of(value: object) -> str:
    return value if isinstance(value, str) else ""


def non_negative(value: object) -> float:
    """A usage figure: a finite non-negative JSON number, else 0."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return 0.0


def _blocks(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def _block_text(block: object) -> str | None:
    if (
        isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ):
        text: str = block["text"]
        return text
    return None


def assistant_text(task_id: str, child_id: str, message: Mapping[str, Any]) -> AssistantText:
    """A finalised assistant message: its text blocks joined with newlines, and its usage."""
    texts = [t for t in (_block_text(b) for b in _blocks(message)) if t is not None]
    usage = message.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    cost = usage.get("cost")
    total = cost.get("total") if isinstance(cost, dict) else None
    reported = (
        isinstance(total, int | float)
        and not isinstance(total, bool)
        and math.isfinite(total)
        and total >= 0
    )
    return AssistantText(
        task_id=task_id,
        child_id=child_id,
        text="\n".join(texts),
        input_tokens=int(non_negative(usage.get("input"))),
        output_tokens=int(non_negative(usage.get("output"))),
        cost=non_negative(total),
        cost_reported=reported,
        cache_read=_count(usage.get("cacheRead")),
        cache_write=_count(usage.get("cacheWrite")),
        usage_reported=bool(usage),
        stop_reason=message.get("stopReason")
        if isinstance(message.get("stopReason"), str)
        else None,
    )


def _count(value: object) -> int | None:
    """A reported token count, or ``None`` when it was not reported (never a made-up 0)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def user_text(message: Mapping[str, Any]) -> str:
    """A user message's text: its content string, or its text blocks joined with newlines."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(t for t in (_block_text(b) for b in _blocks(message)) if t is not None)


def requested_calls(message: Mapping[str, Any]) -> tuple[RequestedCall, ...]:
    """The tool calls of an assistant message, raw arguments included."""
    return tuple(
        RequestedCall(
            tool_call_id=block["id"],
            tool_name=text_of(block.get("name")),
            arguments=block.get("arguments"),
        )
        for block in _blocks(message)
        if isinstance(block, dict)
        and block.get("type") == "toolCall"
        and isinstance(block.get("id"), str)
    )


def tool_result(task_id: str, child_id: str, message: Mapping[str, Any]) -> ToolResultSeen:
    """A finalised tool-result message: its text blocks in order (``None`` for any other)."""
    return ToolResultSeen(
        task_id=task_id,
        child_id=child_id,
        tool_call_id=text_of(message.get("toolCallId")),
        tool_name=text_of(message.get("toolName")),
        is_error=message.get("isError") is not False,
        texts=tuple(_block_text(block) for block in _blocks(message)),
    )


def session_from_state(record: Mapping[str, Any]) -> tuple[str, str | None] | None:
    """``(sessionFile, sessionId)`` of a ``get_state`` answer, or ``None``."""
    data = record.get("data")
    if not isinstance(data, dict):
        return None
    session_file = data.get("sessionFile")
    if not isinstance(session_file, str) or not session_file:
        return None
    session_id = data.get("sessionId")
    return session_file, session_id if isinstance(session_id, str) else None


def error_text(record: Mapping[str, Any]) -> str:
    error = record.get("error")
    return error if isinstance(error, str) and error else "no reason given"
