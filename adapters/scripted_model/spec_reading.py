"""What a scripted agent knows about its spec reading, learned from the conversation alone.

The contract between the squad bootstrap (and the child's ``squad_spec_read`` tool) and this
model, in order of precedence:

``squad-spec-chunks: N``
    A line anywhere (system prompt, user message or tool result) giving the chunk count.
    The last one wins. Otherwise the count is read from prose or JSON in the system prompt and
    user messages (``"chunkCount": N``, ``chunkCount: N``, ``chunk count: N``, ``chunks: N``,
    ``N chunks``), else from the JSON metadata line that opens a ``squad_spec_read`` result
    (``{"index": i, "chunkCount": N, ...}``).
``squad-spec-missing: 0,1,2``
    A line giving the indices still to read (``[0, 1, 2]``, an empty list and ``none`` are
    accepted too). Also understood: ``missing indices: [..]``, ``Missing chunk indices: [..]``,
    ``"missingIndices": [..]``. The latest statement wins, minus the chunks delivered after it:
    a statement inside a tool result was made while its own round's reads were still being
    preflighted, so reads of that round count as later; the system prompt's (the child's
    bootstrap, rebuilt for every run) is as of the run's opening user message, so after a
    restart it may list again chunks the history shows delivered but never committed.

A ``squad_spec_read`` call counts as delivered when its result opens with a JSON metadata line
naming its ``index`` (the contract's format), or, for any other format, when the result does not
open like an error (``Error``, ``Blocked``, ``Validation failed``, ``Read every canonical ...``).
The index argument is the integer property of the tool's schema (``index`` by default).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from adapters.scripted_model.conversation import Conversation, Message

SPEC_TOOL = "squad_spec_read"
CHUNKS_MARKER = "squad-spec-chunks"
MISSING_MARKER = "squad-spec-missing"
MAX_ATTEMPTS_PER_CHUNK = 3
"""A chunk requested this many times and still missing is given up (no endless loops)."""

_INT = r"(\d{1,7})"
_EXPLICIT_CHUNKS = re.compile(rf"^[ \t]*{CHUNKS_MARKER}[ \t]*:[ \t]*{_INT}[ \t]*$", re.MULTILINE)
_EXPLICIT_MISSING = re.compile(rf"^[ \t]*{MISSING_MARKER}[ \t]*:[ \t]*(.*?)[ \t]*$", re.MULTILINE)
_PROSE_CHUNKS = (
    re.compile(rf'"chunkCount"\s*:\s*{_INT}'),
    re.compile(rf"\bchunk[ _-]?count\b\s*(?:[:=]|is|of)?\s*{_INT}", re.IGNORECASE),
    re.compile(rf"\bchunks\s*[:=]\s*{_INT}", re.IGNORECASE),
    re.compile(rf"\b{_INT}\s+(?:spec\s+|canonical\s+)?chunks\b", re.IGNORECASE),
)
_PROSE_MISSING = (
    re.compile(r'"missing(?:Indices|Chunks)"\s*:\s*\[([\d,\s]*)\]'),
    re.compile(
        r"\bmissing(?:\s+chunk)?\s+(?:indices|indexes|chunks)\s*[:=]?\s*\[([\d,\s]*)\]", re.I
    ),
)
_ERROR_OPENINGS = (
    "error",
    "blocked",
    "validation failed",
    "read every",
    "tool ",
    "out of range",
    "denied",
    "refused",
    "failed",
)


@attrs.frozen
class SpecProgress:
    offered: bool
    """Whether the request offers the ``squad_spec_read`` tool at all."""
    index_argument: str
    chunk_count: int | None
    delivered: frozenset[int]
    missing: tuple[int, ...]
    """Still to read, ascending; empty when done or when the count is unknown."""
    given_up: tuple[int, ...]
    """Requested ``MAX_ATTEMPTS_PER_CHUNK`` times and still missing."""

    @property
    def complete(self) -> bool:
        return self.chunk_count is not None and not self.missing and not self.given_up

    @property
    def readable(self) -> tuple[int, ...]:
        """Missing chunks worth another request."""
        return tuple(i for i in self.missing if i not in self.given_up)

    def read_call(self, index: int) -> tuple[str, dict[str, Any]]:
        return SPEC_TOOL, {self.index_argument: index}


def spec_progress(conversation: Conversation) -> SpecProgress:
    index_argument = _index_argument(conversation.tools.get(SPEC_TOOL, {}))
    deliveries: list[tuple[int, float]] = []  # (index, position)
    delivered_results: set[str] = set()  # call ids whose result carries spec text
    attempts: dict[int, int] = {}
    metadata_count: int | None = None
    for message, call in conversation.calls(SPEC_TOOL):
        requested = _as_index(call.arguments.get(index_argument))
        if requested is not None:
            attempts[requested] = attempts.get(requested, 0) + 1
        result = conversation.result_for(call.id)
        if result is None:
            continue
        metadata = _metadata(result.text)
        if metadata is not None:
            index = _as_index(metadata.get("index"))
            count = _as_index(metadata.get("chunkCount"))
            if count is not None:
                metadata_count = count
            if index is not None:
                deliveries.append((index, float(message.round)))
                delivered_results.add(call.id)
        elif requested is not None and not _looks_failed(result.text):
            deliveries.append((requested, float(message.round)))
            delivered_results.add(call.id)

    # Spec text must never steer the model: delivered chunks are not searched for statements.
    statements = [
        m
        for m in conversation.messages
        if not (m.role == "tool" and m.tool_call_id in delivered_results)
    ]
    chunk_count = _explicit_count(statements)
    if chunk_count is None:
        chunk_count = _prose_count(conversation.by_role("system", "developer", "user"))
    if chunk_count is None:
        chunk_count = metadata_count

    statement = _latest_missing_statement(statements)
    if statement is not None:
        stated, position = statement
        later = {index for index, at in deliveries if at > position}
        missing = set(stated) - later
    elif chunk_count is not None:
        missing = set(range(chunk_count)) - {index for index, _ in deliveries}
    else:
        missing = set()
    if chunk_count is not None:
        missing = {i for i in missing if 0 <= i < chunk_count}
    given_up = tuple(sorted(i for i in missing if attempts.get(i, 0) >= MAX_ATTEMPTS_PER_CHUNK))
    return SpecProgress(
        offered=conversation.offers(SPEC_TOOL),
        index_argument=index_argument,
        chunk_count=chunk_count,
        delivered=frozenset(index for index, _ in deliveries),
        missing=tuple(sorted(missing)),
        given_up=given_up,
    )


def _index_argument(schema: Mapping[str, Any]) -> str:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return "index"
    if "index" in properties:
        return "index"
    for name, prop in properties.items():
        if isinstance(prop, dict) and prop.get("type") == "integer":
            return str(name)
    return "index"


def _as_index(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _metadata(text: str) -> dict[str, Any] | None:
    first_line = text.split("\n", 1)[0].strip()
    if not first_line.startswith("{"):
        return None
    try:
        decoded = json.loads(first_line)
    except json.JSONDecodeError:
        return None
    if isinstance(decoded, dict) and "index" in decoded:
        return decoded
    return None


def _looks_failed(text: str) -> bool:
    opening = text.lstrip().lower()
    return not opening or opening.startswith(_ERROR_OPENINGS)


def _explicit_count(messages: Iterable[Message]) -> int | None:
    found: int | None = None
    for message in messages:
        for match in _EXPLICIT_CHUNKS.finditer(message.text):
            found = int(match.group(1))
    return found


def _prose_count(messages: Iterable[Message]) -> int | None:
    found: int | None = None
    for message in messages:
        for pattern in _PROSE_CHUNKS:
            matches = list(pattern.finditer(message.text))
            if matches:
                found = int(matches[-1].group(1))
                break
    return found


def _parse_indices(text: str) -> tuple[int, ...] | None:
    cleaned = text.strip().strip("[]").strip()
    if cleaned.lower() in ("", "none", "-"):
        return ()
    parts = [p.strip() for p in re.split(r"[,\s]+", cleaned) if p.strip()]
    if not all(p.isdigit() for p in parts):
        return None
    return tuple(int(p) for p in parts)


def _latest_missing_statement(
    messages: Iterable[Message],
) -> tuple[tuple[int, ...], float] | None:
    ordered = list(messages)
    # The system prompt is rebuilt before every run (the child's bootstrap), so its statement
    # is as of the run's opening user message, not of the conversation's start: a resumed
    # session's history may hold deliveries a crash kept from counting, which it lists again.
    run_opened = max((m.round for m in ordered if m.role == "user"), default=0)
    latest: tuple[tuple[int, ...], float] | None = None
    for message in ordered:
        # A tool result's statement predates its own round's deliveries (parallel preflight);
        # a system or user message's statement follows every round before it.
        if message.role == "tool":
            position = message.round - 0.5
        elif message.role in {"system", "developer"}:
            position = run_opened + 0.5
        else:
            position = message.round + 0.5
        found: tuple[int, ...] | None = None
        for match in _EXPLICIT_MISSING.finditer(message.text):
            parsed = _parse_indices(match.group(1))
            if parsed is not None:
                found = parsed
        if found is None:
            for pattern in _PROSE_MISSING:
                for match in pattern.finditer(message.text):
                    parsed = _parse_indices(match.group(1))
                    if parsed is not None:
                        found = parsed
        # The statement made last wins (the system prompt's may come first in the list).
        if found is not None and (latest is None or position >= latest[1]):
            latest = (found, position)
    return latest
