"""The bridge's own escape of tool-result texts (``adapters.bridge.protocol.tool_result_line``):
for every text, every ``details`` and every chunk of bytes the reader can render, the line is
byte for byte what the generic encoder writes (``encode_line(ok_response(...))``)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.bridge import protocol
from adapters.bridge.protocol import encode_line, ok_response, tool_result_line, tool_result_payload
from application.canonical import CanonicalSpec
from application.child.reader import ChunkRenderings, compact_json
from application.ports import ToolResult
from domain.chunks import ChunkRef, ChunkTable, sha256_hex

# What JSON escapes, what it must not (DEL, U+2028/9, non-BMP), lone surrogates, multi-byte.
SPECIALS = '\\"\n\r\t\b\f\x00\x01\x07\x0b\x0e\x1b\x1f\x7f\u2028\u2029\ud800\udfff\U0001f642é€ '
CHARACTERS = st.characters(blacklist_categories=()) | st.sampled_from(SPECIALS)
TEXTS = st.text(CHARACTERS, max_size=60)
# Long enough for the memchr scan (``_SCAN_FROM``), not only ``translate``.
PADDING = st.sampled_from(["", "a" * protocol._SCAN_FROM, "é🙂 " * 1500])


def json_line(message: object) -> bytes:
    """``encode_line`` as ``json.dumps`` defines it (the protocol keeps its encoders built)."""
    try:
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        text = json.dumps(message, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
        return text.encode("ascii") + b"\n"


def reference(request_id: int | str, result: ToolResult) -> bytes:
    line = json_line(ok_response(request_id, tool_result_payload(result)))
    assert encode_line(ok_response(request_id, tool_result_payload(result))) == line
    return line


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXTS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXTS, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(value=JSON_VALUES)
def test_the_kept_encoders_write_what_json_dumps_writes(value: object) -> None:
    assert encode_line(value) == json_line(value)
    if isinstance(value, dict):
        expected = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        assert compact_json(value) == expected


def with_utf8(texts: tuple[str, ...]) -> tuple[bytes | None, ...]:
    encoded: list[bytes | None] = []
    for text in texts:
        try:
            encoded.append(text.encode("utf-8"))
        except UnicodeEncodeError:  # a lone surrogate has no UTF-8: the producer gives None
            encoded.append(None)
    return tuple(encoded)


@settings(max_examples=400, deadline=None)
@given(
    pieces=st.lists(st.tuples(PADDING, TEXTS, PADDING), max_size=3),
    request_id=st.integers(min_value=0, max_value=2**63) | st.text(max_size=5),
    details=st.dictionaries(TEXTS, st.integers() | TEXTS | st.none(), max_size=4),
)
def test_every_line_is_the_generic_encoding_byte_for_byte(
    pieces: list[tuple[str, str, str]], request_id: int | str, details: dict[str, object]
) -> None:
    texts = tuple(before + text + after for before, text, after in pieces)
    expected = reference(request_id, ToolResult(texts=texts, details=details))
    assert tool_result_line(request_id, ToolResult(texts=texts, details=details)) == expected
    given_utf8 = ToolResult(texts=texts, details=details, utf8=with_utf8(texts))
    assert tool_result_line(request_id, given_utf8) == expected
    # Decoded as any JSON reader decodes it (a surrogate pair written as two escapes comes
    # back as the one character it encodes, in the texts as in the keys).
    result = {"texts": list(texts), "details": details}
    assert json.loads(expected)["result"] == json.loads(json.dumps(result))


@pytest.mark.parametrize("length", [0, 1, protocol._SCAN_FROM - 1, protocol._SCAN_FROM, 40000])
@pytest.mark.parametrize("character", [chr(code) for code in range(0x20)] + ["\x7f", "\u2028"])
def test_each_control_character_at_every_scan_length(character: str, length: int) -> None:
    for text in (character + "x" * length, "é" * length + character, "🙂" * length + character):
        for result in (
            ToolResult(texts=(text,), details={}),
            ToolResult(texts=(text,), details={}, utf8=(text.encode(),)),
        ):
            assert tool_result_line(7, result) == reference(7, result)


def test_a_lone_surrogate_anywhere_gives_the_generic_all_ascii_line() -> None:
    for result in (
        ToolResult(texts=("é", "a\ud800"), details={"k": "€"}),
        ToolResult(texts=("é",), details={"k\udc00": 1}),
    ):
        line = tool_result_line(3, result)
        assert line == reference(3, result)
        assert line.isascii()


def test_a_bool_or_string_id_is_written_as_json_writes_it() -> None:
    result = ToolResult(texts=("a",), details={})
    assert tool_result_line(True, result) == reference(True, result)  # true, never 1
    assert tool_result_line("x\u2028", result) == reference("x\u2028", result)


def test_utf8_must_give_one_encoding_per_text() -> None:
    with pytest.raises(ValueError, match="2 UTF-8 encodings for 1 texts"):
        ToolResult(texts=("a",), details={}, utf8=(b"a", b"b"))
    # Derived data: two results that differ only there are the same result.
    assert ToolResult(texts=("a",), details={}, utf8=(b"a",)) == ToolResult(
        texts=("a",), details={}
    )


BYTES = st.binary(max_size=200) | st.text(
    CHARACTERS.filter(lambda c: not 0xD800 <= ord(c) <= 0xDFFF), max_size=80
).map(str.encode)


@settings(max_examples=300, deadline=None)
@given(data=BYTES, cut=st.integers(min_value=0, max_value=400), padding=PADDING)
def test_a_rendered_chunk_of_any_bytes_is_written_as_its_text_or_fails_as_chunk_text(
    data: bytes, cut: int, padding: str
) -> None:
    # Two chunks cut at an arbitrary byte, possibly inside a multi-byte sequence (a table
    # built by hand: ``ChunkTable.of`` never cuts there), rendered as the reader renders them.
    data = padding.encode() + data + b"."
    cut = min(cut, len(data) - 1) + 1 if len(data) > 1 else 1
    bounds = [(0, cut), (cut, len(data))] if cut < len(data) else [(0, len(data))]
    table = ChunkTable(
        spec_bytes=len(data),
        spec_sha256=sha256_hex(data),
        chunk_bytes=max(end - start for start, end in bounds),
        chunks=tuple(
            ChunkRef(index=i, start_byte=s, end_byte_exclusive=e, sha256=sha256_hex(data[s:e]))
            for i, (s, e) in enumerate(bounds)
        ),
    )
    canonical = CanonicalSpec(data=data, table=table)
    for index in range(len(bounds)):
        try:
            text = canonical.chunk_text(index)
        except UnicodeDecodeError:
            with pytest.raises(UnicodeDecodeError):  # the reader fails exactly where it failed
                ChunkRenderings("s", "t").of(canonical, index)
            continue
        rendering = ChunkRenderings("s", "t").of(canonical, index)
        assert rendering.chunk_text == text
        assert rendering.chunk_utf8 == text.encode("utf-8")
        texts = (rendering.metadata_text, rendering.chunk_text)
        fast = ToolResult(texts=texts, details=rendering.details, utf8=(None, rendering.chunk_utf8))
        assert tool_result_line(5, fast) == reference(5, fast)


def test_an_internal_failure_names_its_type_and_errno_never_its_message() -> None:
    from adapters.bridge.protocol import failure_name

    denied = OSError(30, "Read-only file system", "/secret/spec/path")
    assert failure_name(denied) == "OSError (EROFS)"
    assert failure_name(PermissionError(13, "Permission denied")) == "PermissionError (EACCES)"
    assert failure_name(ValueError("spec text here")) == "ValueError"
