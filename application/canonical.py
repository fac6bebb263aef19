"""Reading the canonical spec of a file squad: every read verifies length and SHA-256.

The chunk table of a verified spec depends only on its bytes, so it is cached by digest; the
bytes themselves are re-read and re-hashed on every call, as contract §7 requires.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import attrs

from application.ports import FileSystem, StableReadError
from domain import paths
from domain.chunks import ChunkTable

if TYPE_CHECKING:
    # Annotations only: a child's bridge never builds the squad model (start-up per task).
    from domain.squad.model import SpecRef


@attrs.define
class CanonicalIntegrityError(Exception):
    """The canonical file is missing, unstable, or not the bytes the squad was created with."""

    reason: str


@attrs.frozen
class CanonicalSpec:
    data: bytes = attrs.field(repr=False)
    table: ChunkTable

    def chunk_bytes(self, index: int) -> bytes:
        ref = self.table.chunk(index)
        return self.data[ref.start_byte : ref.end_byte_exclusive]

    def chunk_text(self, index: int) -> str:
        return chunk_text_of(self.chunk_bytes(index))


def chunk_text_of(chunk: bytes) -> str:
    """A chunk's text: its strict UTF-8 decode (bytes that are not UTF-8 raise, never pass)."""
    return chunk.decode("utf-8", errors="strict")


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
    """Verified reads of one canonical file; thread-safe.

    With ``squad_dir`` (the parent's readers) every read first checks the location rule the
    child enforces on its environment: the path is exactly ``<squad-dir>/spec/spec.v1.json``
    of that squad, and neither the squad directory nor ``spec/`` is a symbolic link (the read
    itself refuses a final symlink). A violation is a ``CanonicalIntegrityError`` like any
    other: a ``squad.json`` pointing elsewhere, or a ``spec/`` swapped for a link to an
    identical copy, never verifies.
    """

    def __init__(
        self, fs: FileSystem, spec: SpecRef | CanonicalIdentity, *, squad_dir: str | None = None
    ) -> None:
        self._fs = fs
        self._spec = spec if isinstance(spec, CanonicalIdentity) else CanonicalIdentity.of(spec)
        self._squad_dir = squad_dir
        # What ``check_location`` derives from the fixed paths alone: the directories to check
        # on the file system, or why the pinned path is wrong. Computed once; pure.
        self._location_plan: tuple[str, ...] | str | None = None

    @property
    def identity(self) -> CanonicalIdentity:
        return self._spec

    def check_location(self) -> None:
        """``CanonicalIntegrityError`` unless the canonical file is where the squad keeps it."""
        plan = self._location_plan
        if plan is None:
            plan = self._location_plan = self._plan_location()
        if isinstance(plan, str):
            raise CanonicalIntegrityError(plan)
        for directory in plan:
            if not self._fs.is_dir(directory):
                raise CanonicalIntegrityError(
                    f"canonical spec directory {directory} is not a real directory (a symbolic "
                    "link, or missing)"
                )

    def _plan_location(self) -> tuple[str, ...] | str:
        squad_dir = self._squad_dir
        if squad_dir is None:
            return ()
        flavour = self._fs.flavour
        expected = paths.canonical_spec_path(squad_dir, flavour)
        if not paths.same_path(self._spec.path, expected, flavour):
            return (
                f"canonical spec path is not {expected} (<squad-dir>/spec/spec.v1.json of this "
                "squad); squad.json points elsewhere"
            )
        return (squad_dir, paths.join_path(squad_dir, paths.CANONICAL_DIR, flavour=flavour))

    def read(self) -> CanonicalSpec:
        spec = self._spec
        self.check_location()
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
