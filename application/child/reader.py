"""The reader tool ``squad_spec_read`` (contract §7): its registration, its one input rule,
what one execution returns, and how Pi's finalised delivery of that result is recognised."""

from __future__ import annotations

import json
import threading
import types
from collections.abc import Mapping
from typing import Any

import attrs

from application.canonical import CanonicalSpec, chunk_text_of
from application.ports import ToolSpec
from domain.attestation.grounding import strict_reader_index
from domain.spec.documents import tool_parameters

READER_TOOL = "squad_spec_read"
READER_INPUT_REASON = (
    'squad_spec_read takes exactly {"index": <integer >= 0>}: a JSON integer, not a string, '
    "boolean or null."
)


def reader_tool_spec() -> ToolSpec:
    return ToolSpec(
        name=READER_TOOL,
        label="Read squad spec chunk",
        description=(
            "Read one chunk of this squad's canonical specification by index. Every chunk must "
            "be read (any order, several per message allowed) before any other tool can run."
        ),
        parameters=tool_parameters("spec-read-call"),
    )


def reader_index(params: object) -> int | None:
    """The index of a well-formed reader input, exactly ``{"index": int >= 0}``; else ``None``
    (the same rule the parent applies to the model's raw arguments)."""
    return strict_reader_index(params)


def chunk_metadata(
    squad_id: str, task_id: str, canonical: CanonicalSpec, index: int
) -> dict[str, Any]:
    """The §7 metadata of one chunk, keys in the contract's fixed order."""
    table = canonical.table
    ref = table.chunk(index)
    return {
        "version": 1,
        "squadId": squad_id,
        "taskId": task_id,
        "index": ref.index,
        "chunkCount": table.chunk_count,
        "startByte": ref.start_byte,
        "endByteExclusive": ref.end_byte_exclusive,
        "chunkBytes": table.chunk_bytes,
        "chunkSha256": ref.sha256,
        "specBytes": table.spec_bytes,
        "specSha256": table.spec_sha256,
    }


# ``json.dumps`` with these arguments builds this very encoder on every call; one instance
# writes the same text and keeps no state between calls.
_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def compact_json(value: Mapping[str, Any]) -> str:
    return _COMPACT.encode(value)


@attrs.frozen
class ChunkRendering:
    """The two result blocks and the ``details`` of one chunk of verified canonical bytes;
    ``chunk_utf8`` is those bytes, of which ``chunk_text`` is the strict decode."""

    index: int
    metadata_text: str
    chunk_text: str
    details: Mapping[str, Any]
    chunk_utf8: bytes = attrs.field(repr=False)


# A child reads one spec; the bound only keeps a runaway table (tiny chunks) from growing it.
_MAX_RENDERINGS = 4096


class ChunkRenderings:
    """Renderings of the chunks of one task's canonical spec, built once per digest; thread-safe.

    Every read still verifies the whole file's SHA-256 first (contract §7); what is reused is
    only what those verified bytes render to. A rendering depends on the bytes (named by
    ``specSha256``, just verified), the chunk size, the index and the fixed squad and task ids,
    so equal keys render equal blocks, and the same ``str`` objects come back each time (their
    hashes and comparisons are then cheap for the bridge and for ``message_end``).
    """

    def __init__(self, squad_id: str, task_id: str) -> None:
        self._squad_id = squad_id
        self._task_id = task_id
        self._cache: dict[tuple[str, int, int], ChunkRendering] = {}
        self._guard = threading.Lock()

    def of(self, canonical: CanonicalSpec, index: int) -> ChunkRendering:
        table = canonical.table
        key = (table.spec_sha256, table.chunk_bytes, index)
        with self._guard:
            cached = self._cache.get(key)
        if cached is not None:
            return cached
        details = chunk_metadata(self._squad_id, self._task_id, canonical, index)
        chunk_utf8 = canonical.chunk_bytes(index)
        rendering = ChunkRendering(
            index=index,
            metadata_text=compact_json(details),
            # Exactly ``canonical.chunk_text(index)``; the bytes are kept as well so the bridge
            # writes them without encoding the text again (``ToolResult.utf8``).
            chunk_text=chunk_text_of(chunk_utf8),
            # Shared by every result of this chunk: read-only, so no consumer can alter another's.
            details=types.MappingProxyType(details),
            chunk_utf8=chunk_utf8,
        )
        with self._guard:
            if len(self._cache) >= _MAX_RENDERINGS:
                self._cache.clear()
            return self._cache.setdefault(key, rendering)


@attrs.frozen
class PendingRead:
    """What an execution returned: untrusted until its finalised ``message_end`` matches."""

    index: int
    metadata_text: str
    chunk_text: str
    details: Mapping[str, Any]


def is_delivery_of(message: Mapping[str, Any], pending: PendingRead) -> bool:
    """The finalised result carries exactly what the execution returned, and succeeded."""
    if message.get("toolName") != READER_TOOL or message.get("isError") is not False:
        return False
    content = message.get("content")
    expected = [
        {"type": "text", "text": pending.metadata_text},
        {"type": "text", "text": pending.chunk_text},
    ]
    return content == expected and message.get("details") == dict(pending.details)
