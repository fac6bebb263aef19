"""The ports: small protocols the use cases depend on. Adapters implement them explicitly.

Adapters raise only the exceptions declared here (or ``OSError`` from write operations, which
use cases translate into their own codes), so a use case never has to know which operating
system it runs on.
"""

from __future__ import annotations

import enum
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Literal, Protocol

import attrs

PathFlavour = Literal["posix", "windows"]


@attrs.frozen
class FileIdentity:
    """What pins one opened file: compared before, during and after every stable read."""

    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int


@attrs.frozen
class StableRead:
    """All bytes of one regular file, read from one pinned descriptor that did not change."""

    path: str
    data: bytes
    identity: FileIdentity
    sha256: str


@attrs.frozen
class StableDigest:
    """Length and SHA-256 of a file streamed from one pinned descriptor that did not change."""

    path: str
    size: int
    sha256: str
    identity: FileIdentity


class ReadFailure(enum.Enum):
    MISSING = "missing"
    SYMLINK = "symlink"
    NOT_REGULAR = "not a regular file"
    CHANGED = "changed while it was read"
    UNREADABLE = "unreadable"
    TOO_LARGE = "too large"
    INVALID_PATH = "invalid path"


class StableReadError(Exception):
    """A stable read was refused. ``detail`` never contains file content."""

    def __init__(self, failure: ReadFailure, path: str, detail: str, *, size: int | None = None):
        super().__init__(f"{path}: {failure.value}: {detail}")
        self.failure = failure
        self.path = path
        self.detail = detail
        self.size = size


class FileSystem(Protocol):
    """The filesystem as the contract needs it. Paths are absolute native strings."""

    @property
    def flavour(self) -> PathFlavour: ...

    def read_stable(self, path: str, *, max_bytes: int) -> StableRead:
        """Read a regular, non-symlink file through one pinned descriptor.

        Raises ``StableReadError``: ``TOO_LARGE`` (with ``size``) without reading the content
        when the file is longer than ``max_bytes``; ``MISSING``, ``SYMLINK``, ``NOT_REGULAR``
        (never blocking on a FIFO or device), ``CHANGED`` when identity, size, mtime or ctime
        moved between the checks, ``UNREADABLE`` otherwise.
        """
        ...

    def digest_stable(self, path: str) -> StableDigest:
        """Like ``read_stable`` but streams the file through SHA-256 in bounded memory."""
        ...

    def make_dir_exclusive(self, path: str, mode: int) -> None:
        """Create one directory; ``FileExistsError`` if anything is there already."""
        ...

    def ensure_dir(self, path: str, mode: int) -> None:
        """Create a directory and its parents if missing (used for the squad root only)."""
        ...

    def create_file_exclusive(self, path: str, data: bytes, mode: int) -> None:
        """Create a new file with ``mode`` (never replacing one), write ``data``, fsync it."""
        ...

    def write_atomic(self, path: str, data: bytes) -> None:
        """Same-directory temp file, fsync, ``os.replace``, fsync the directory."""
        ...

    def fsync_dir(self, path: str) -> None: ...

    def rename_no_replace(self, source: str, target: str) -> None:
        """Rename ``source`` to ``target``; ``FileExistsError`` if ``target`` exists, even an
        empty directory. Never merges or replaces."""
        ...

    def mark_read_only(self, path: str) -> None: ...

    def list_dir(self, path: str) -> list[str]:
        """Entry names, sorted; ``FileNotFoundError`` if the directory is missing."""
        ...

    def is_dir(self, path: str) -> bool:
        """True for a real directory (a symlink to one is not)."""
        ...

    def exists(self, path: str) -> bool:
        """True if anything, a dangling symlink included, is at ``path``."""
        ...

    def read_small(self, path: str, max_bytes: int) -> bytes:
        """Read a state file the project itself wrote (same refusals as ``read_stable``)."""
        ...

    def remove_tree(self, path: str) -> None:
        """Remove a directory tree the project created; never follows symlinks out of it."""
        ...


class Clock(Protocol):
    def now(self) -> datetime:
        """Aware UTC time. Use cases read it once per operation."""
        ...

    def monotonic(self) -> float: ...


class Ids(Protocol):
    def uuid4_hex(self) -> str: ...


class LockFactory(Protocol):
    def lock(self, path: str) -> AbstractContextManager[None]:
        """A cross-process exclusive lock named by ``path`` (the lock file)."""
        ...


