"""Reading the canonical spec of a file squad: every read verifies length and SHA-256.

The chunk table of a verified spec depends only on its bytes, so it is cached by digest; the
bytes themselves are re-read and re-hashed on every call, as contract §7 requires.
"""

from __future__ import annotations

import threading

import attrs

from application.ports import FileSystem, StableReadError
from domain.chunks import ChunkTable
from domain.squad.model import SpecRef


class CanonicalIntegrityError(Exception):
    """The canonical file is missing, unstable, or not the bytes the squad was created with."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@attrs.frozen
class CanonicalSpec:
    data: bytes = attrs.field(repr=False)
    table: ChunkTable

    def chunk_bytes(self, index: int) -> bytes:
        ref = self.table.chunk(index)
        return self.data[ref.start_byte : ref.end_byte_exclusive]

    def chunk_text(self, index: int) -> str:
        return self.chunk_bytes(index).decode("utf-8", errors="strict")


@attrs.frozen
class CanonicalIdentity:
    """What a canonical file must be. ``chunk_count`` is ``None`` where it is not known yet
    (a child learns it from its first verified read)."""

    path: str
    sha256: str
    bytes: int
    chunk_bytes: int
    chunk_count: int | None

    @classmethod
    def of(cls, spec: SpecRef) -> CanonicalIdentity:
        return cls(spec.path, spec.sha256, spec.bytes, spec.chunk_bytes, spec.chunk_count)


# The chunk table of verified bytes depends only on their digest and the chunk size, so one
# table serves every reader in the process (the auditor builds a reader per call).
_TABLES: dict[tuple[str, int], ChunkTable] = {}
_TABLES_GUARD = threading.Lock()
_MAX_TABLES = 32


def _table_for(data: bytes, sha256: str, chunk_bytes: int) -> ChunkTable:
    key = (sha256, chunk_bytes)
    with _TABLES_GUARD:
        table = _TABLES.get(key)
    if table is None:
        table = ChunkTable.of(data, chunk_bytes)
        with _TABLES_GUARD:
            if len(_TABLES) >= _MAX_TABLES:
                _TABLES.pop(next(iter(_TABLES)))
            _TABLES[key] = table
    return table


class CanonicalReader:
    """Verified reads of one canonical file; thread-safe."""

    def __init__(self, fs: FileSystem, spec: SpecRef | CanonicalIdentity) -> None:
        self._fs = fs
        self._spec = spec if isinstance(spec, CanonicalIdentity) else CanonicalIdentity.of(spec)

    @property
    def identity(self) -> CanonicalIdentity:
        return self._spec

    def read(self) -> CanonicalSpec:
        spec = self._spec
        try:
            read = self._fs.read_stable(spec.path, max_bytes=spec.bytes)
        except StableReadError as exc:
            raise CanonicalIntegrityError(
                f"canonical spec {exc.failure.value}: {exc.detail}"
            ) from None
        if len(read.data) != spec.bytes:
            raise CanonicalIntegrityError(
                f"canonical spec is {len(read.data)} bytes; the squad pins {spec.bytes}"
            )
        if read.sha256 != spec.sha256:
            raise CanonicalIntegrityError(
                f"canonical spec SHA-256 is {read.sha256}; the squad pins {spec.sha256}"
            )
        table = _table_for(read.data, read.sha256, spec.chunk_bytes)
        if spec.chunk_count is not None and table.chunk_count != spec.chunk_count:
            raise CanonicalIntegrityError(
                f"canonical spec has {table.chunk_count} chunks; the squad pins {spec.chunk_count}"
            )
        return CanonicalSpec(data=read.data, table=table)
