"""The deterministic UTF-8 chunk algebra of contract §7.

Boundaries are computed over the canonical raw bytes with ``C = 32768``: each candidate end
is moved back while it points at a UTF-8 continuation byte, so every chunk is a whole number
of code points. ``chunk_count`` comes from running the algorithm, never from ``ceil(n / C)``:
moved-back ends can add a chunk.
"""

from __future__ import annotations

import hashlib

import attrs

CHUNK_BYTES = 32768
_CONTINUATION_MASK = 0xC0
_CONTINUATION_BITS = 0x80


def sha256_hex(data: bytes | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()


def chunk_boundaries(data: bytes, chunk_bytes: int = CHUNK_BYTES) -> list[tuple[int, int]]:
    """``[(start, end_exclusive), ...]`` exactly as §7 specifies.

    The input must be valid UTF-8 (the canonical spec always is); on other input a chunk made
    only of continuation bytes cannot shrink further, so a ``ValueError`` is raised instead of
    looping forever.
    """
    if chunk_bytes < 4:
        raise ValueError("chunk size must hold the longest UTF-8 sequence (4 bytes)")
    length = len(data)
    bounds: list[tuple[int, int]] = []
    start = 0
    while start < length:
        candidate = min(start + chunk_bytes, length)
        while candidate < length and (data[candidate] & _CONTINUATION_MASK) == _CONTINUATION_BITS:
            candidate -= 1
        if candidate <= start:
            raise ValueError(f"no code-point boundary after byte {start}: input is not UTF-8")
        bounds.append((start, candidate))
        start = candidate
    return bounds


@attrs.frozen
class ChunkRef:
    """One chunk as both sides of the protocol name it: offsets, length and SHA-256."""

    index: int = attrs.field(validator=attrs.validators.ge(0))
    start_byte: int = attrs.field(validator=attrs.validators.ge(0))
    end_byte_exclusive: int = attrs.field()
    sha256: str = attrs.field()

    @end_byte_exclusive.validator
    def _non_empty(self, _attribute: attrs.Attribute[int], value: int) -> None:
        if value <= self.start_byte:
            raise ValueError("a chunk is never empty")

    @property
    def bytes(self) -> int:
        return self.end_byte_exclusive - self.start_byte


@attrs.frozen
class ChunkTable:
    """Every chunk of one canonical file, plus the identity of the whole."""

    spec_bytes: int
    spec_sha256: str
    chunk_bytes: int
    chunks: tuple[ChunkRef, ...]

    @classmethod
    def of(cls, data: bytes, chunk_bytes: int = CHUNK_BYTES) -> ChunkTable:
        view = memoryview(data)
        chunks = tuple(
            ChunkRef(index=i, start_byte=s, end_byte_exclusive=e, sha256=sha256_hex(view[s:e]))
            for i, (s, e) in enumerate(chunk_boundaries(data, chunk_bytes))
        )
        return cls(
            spec_bytes=len(data),
            spec_sha256=sha256_hex(data),
            chunk_bytes=chunk_bytes,
            chunks=chunks,
        )

    @property
    def chunk_count(self) -> int:
        return len(self.chunks)

    def chunk(self, index: int) -> ChunkRef:
        if not 0 <= index < len(self.chunks):
            raise IndexError(
                f"chunk index {index} is out of range: valid indices are 0..{len(self.chunks) - 1}"
            )
        return self.chunks[index]
