"""``update_delta_bytes``: a ``message_update`` line's delta measured without decoding the
partial message it repeats (the worker's output ceiling counts streamed bytes with it)."""

from __future__ import annotations

import io
import json

from adapters.pi_rpc.stdout_records import read_records, update_delta_bytes


def _update(kind: str, delta: str | None) -> bytes:
    event: dict[str, object] = {"type": kind, "contentIndex": 0}
    if delta is not None:
        event["delta"] = delta
    event["partial"] = {"role": "assistant", "content": [{"type": "text", "text": "x" * 500}]}
    record = {"type": "message_update", "assistantMessageEvent": event, "message": {}}
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode()


def test_the_delta_is_measured_in_utf8_bytes_escapes_included() -> None:
    assert update_delta_bytes(_update("text_delta", 'héllo "q" \\n')) == len(
        'héllo "q" \\n'.encode()
    )
    assert update_delta_bytes(_update("toolcall_delta", '{"a":')) == 5
    assert update_delta_bytes(_update("text_start", None)) == 0


def test_updates_reach_on_update_undecoded_and_other_records_the_handler() -> None:
    lines = [_update("text_delta", "ab"), b'{"type":"turn_end"}', _update("text_delta", "c")]
    records: list[dict[str, object]] = []
    updates: list[bytes] = []
    read_records(
        io.BytesIO(b"\n".join(lines) + b"\n"),
        records.append,
        child_id="c",
        max_record_bytes=1 << 20,
        on_update=updates.append,
    )
    assert records == [{"type": "turn_end"}]
    assert [update_delta_bytes(u) for u in updates] == [2, 1]
