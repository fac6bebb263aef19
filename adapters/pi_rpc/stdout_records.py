"""A child's stdout as JSON records: bytes split on ``\\n`` only (Pi writes U+2028/U+2029 raw
inside strings), each line through the project's strict decoder. What cannot be a record (too
long, malformed, not an object) is logged, never with its content, and skipped."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import IO, Any, Final

from domain.strict_json import JsonDecodeFailure, decode_json

logger = logging.getLogger(__name__)

MAX_RECORD_BYTES: Final = 64 * 1024 * 1024
READ_SIZE: Final = 65536
# Pi serialises ``type`` first; these records repeat the whole partial message each time, so
# they are recognised by their prefix and never decoded (a record with another key order is
# simply decoded and then ignored).
_MESSAGE_UPDATE_PREFIX: Final = b'{"type":"message_update"'

Handler = Callable[[dict[str, Any]], None]
UpdateHandler = Callable[[bytes], None]
# Where an update's ``assistantMessageEvent.delta`` starts: Pi writes the event's ``type`` and
# ``contentIndex`` before it, so it lies near the start of the line.
_DELTA_KEY: Final = b'"delta":"'
_DELTA_WINDOW: Final = 256
_DELTA_END: Final = b'","partial":'


def read_records(
    stream: IO[bytes],
    handle: Handler,
    *,
    child_id: str,
    max_record_bytes: int,
    on_update: UpdateHandler | None = None,
) -> None:
    """Call ``handle`` with each record of ``stream`` until it ends; a record longer than
    ``max_record_bytes`` is skipped without being buffered whole. ``message_update`` records
    are never decoded: given ``on_update``, it gets each one's raw line. Raises what reading
    raises."""
    read = getattr(stream, "read1", stream.read)
    pieces: list[bytes] = []
    size = 0
    discarding = False
    while chunk := read(READ_SIZE):
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if discarding:
                discarding = False
            else:
                pieces.append(chunk[start:end])
                _deliver(b"".join(pieces), handle, child_id, on_update)
            pieces, size = [], 0
            start = end + 1
        if start < len(chunk) and not discarding:
            pieces.append(chunk[start:])
            size += len(chunk) - start
            if size > max_record_bytes:
                logger.warning(
                    "child %s: skipped a stdout record over %d bytes", child_id, max_record_bytes
                )
                pieces, size, discarding = [], 0, True
    if pieces and not discarding:
        _deliver(b"".join(pieces), handle, child_id, on_update)


def _deliver(
    line: bytes, handle: Handler, child_id: str, on_update: UpdateHandler | None = None
) -> None:
    if on_update is not None and line.startswith(_MESSAGE_UPDATE_PREFIX):
        on_update(line)
        return
    record = decode_record(line, child_id)
    if record is None:
        return
    try:
        handle(record)
    except Exception:  # a record of an unexpected shape must not stop the reader
        logger.exception("child %s: could not interpret a %r record", child_id, record.get("type"))


def decode_record(line: bytes, child_id: str) -> dict[str, Any] | None:
    """The record on ``line``; ``None`` for a blank line, a ``message_update`` or a bad record."""
    if line.endswith(b"\r"):
        line = line[:-1]
    if not line.strip() or line.startswith(_MESSAGE_UPDATE_PREFIX):
        return None
    try:
        record = decode_json(line)
    except JsonDecodeFailure as failure:
        logger.warning(
            "child %s: skipped a malformed stdout record (%d bytes): %s",
            child_id,
            len(line),
            failure.reason,
        )
        return None
    if not isinstance(record, dict):
        logger.warning("child %s: skipped a stdout record that is not an object", child_id)
        return None
    return record


def update_delta_bytes(line: bytes) -> int:
    """The UTF-8 size of a ``message_update`` line's delta (text, thinking or tool-call
    arguments), read without decoding the partial message the line repeats: Pi writes the
    event as ``{"type","contentIndex","delta","partial"}``, so the delta's JSON string lies
    between ``"delta":`` and ``,"partial":``. 0 when the line has no delta there (a start or
    end event, or another layout)."""
    start = line.find(_DELTA_KEY, 0, _DELTA_WINDOW)
    if start < 0:
        return 0
    start += len(_DELTA_KEY) - 1  # the opening quote
    end = line.find(_DELTA_END, start)
    if end < 0:
        return 0
    try:
        delta = json.loads(line[start : end + 1])
    except ValueError:
        return 0
    return len(delta.encode("utf-8", errors="replace")) if isinstance(delta, str) else 0
