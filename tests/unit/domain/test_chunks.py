from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.chunks import CHUNK_BYTES, ChunkTable, chunk_boundaries

ONE_TO_FOUR_BYTE_CHARS = ["a", "é", "€", "🙂"]


def assert_chunk_laws(data: bytes, chunk_bytes: int = CHUNK_BYTES) -> ChunkTable:
    table = ChunkTable.of(data, chunk_bytes)
    position = 0
    pieces = []
    for i, chunk in enumerate(table.chunks):
        assert chunk.index == i
        assert chunk.start_byte == position, "chunks are contiguous"
        assert 0 < chunk.bytes <= chunk_bytes, "chunks are non-empty and bounded"
        piece = data[chunk.start_byte : chunk.end_byte_exclusive]
        piece.decode("utf-8")  # code-point aligned: each chunk decodes alone
        assert hashlib.sha256(piece).hexdigest() == chunk.sha256
        pieces.append(piece)
        position = chunk.end_byte_exclusive
    assert position == len(data), "chunks cover the input exactly"
    assert b"".join(pieces) == data
    assert table.spec_sha256 == hashlib.sha256(data).hexdigest()
    return table


def test_emoji_across_the_first_boundary_moves_the_end_back() -> None:
    data = ("x" * 32767 + "🙂" + "z" * 40000).encode()
    table = assert_chunk_laws(data)
    assert table.chunks[0].end_byte_exclusive == 32767
    assert table.chunk_count == 3


def test_chunk_count_comes_from_the_algorithm_not_a_ceiling_division() -> None:
    # 2 chunks by ceil(65536 / 32768), but every boundary lands inside a 4-byte character.
    data = ("ab" + "🙂" * 16383 + "cd").encode()
    assert len(data) == 65536
    table = assert_chunk_laws(data)
    assert table.chunk_count == 3 != -(-len(data) // CHUNK_BYTES)


def test_exact_multiple_of_the_chunk_size_has_no_empty_tail() -> None:
    table = assert_chunk_laws(b"a" * (2 * CHUNK_BYTES))
    assert table.chunk_count == 2


def test_one_mebibyte_of_ascii_is_thirty_two_chunks_and_sums_to_its_size() -> None:
    table = assert_chunk_laws(b"q" * 1_048_576)
    assert table.chunk_count == 32
    assert sum(c.bytes for c in table.chunks) == 1_048_576


@pytest.mark.parametrize("char", ONE_TO_FOUR_BYTE_CHARS)
@pytest.mark.parametrize("offset", range(-4, 5))
def test_every_character_width_at_every_offset_around_each_boundary(char: str, offset: int) -> None:
    width = len(char.encode())
    for boundary in (CHUNK_BYTES, 2 * CHUNK_BYTES):
        prefix = boundary + offset
        if prefix < 0:
            continue
        data = b"p" * prefix + char.encode() + b"s" * 100
        table = assert_chunk_laws(data)
        cut = table.chunks[0].end_byte_exclusive
        assert not (prefix < cut < prefix + width), "no boundary inside the character"


def test_chunk_lookup_refuses_out_of_range_indices() -> None:
    table = ChunkTable.of(b"abc")
    with pytest.raises(IndexError, match=r"0\.\.0"):
        table.chunk(1)
    with pytest.raises(IndexError):
        table.chunk(-1)


def test_invalid_utf8_cannot_loop_forever() -> None:
    with pytest.raises(ValueError, match="not UTF-8"):
        chunk_boundaries(b"a" + b"\x80" * 10, chunk_bytes=4)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(ONE_TO_FOUR_BYTE_CHARS), min_size=1, max_size=400),
    st.integers(min_value=4, max_value=64),
)
def test_chunk_laws_hold_for_any_mix_of_widths_and_chunk_sizes(
    chars: list[str], chunk_bytes: int
) -> None:
    assert_chunk_laws("".join(chars).encode(), chunk_bytes)


@settings(max_examples=40, deadline=None)
@given(st.text(min_size=1, max_size=3000))
def test_chunk_laws_hold_for_arbitrary_unicode_text(text: str) -> None:
    data = text.encode("utf-8", errors="surrogatepass")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return
    assert_chunk_laws(data, 16)
