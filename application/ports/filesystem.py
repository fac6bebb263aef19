"""The file-system port: stable (pinned) reads, exclusive creates, atomic writes.

Adapters raise only the exceptions declared here (or ``OSError`` from write operations, which
use cases translate into their own codes), so a use case never has to know which operating
system it runs on.
"""

from __future__ import annotations

import enum
from typing import Protocol

import attrs

# Re-exported: the flavour is a domain notion (the path rules are pure), ports speak it too.
from domain.paths import PathFlavour

__all__ = [
    "FileIdentity",
    "FileSystem",
    "PathFlavour",
    "ReadFailure",
    "StableDigest",
    "StableRead",
    "StableReadError",
]


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
    SIZE_MISMATCH = "not the expected size"


class StableReadError(Exception):
    """A stable read was refused. ``detail`` never contains file content."""

    def __init__(self, failure: ReadFailure, path: str, detail: str, *, size: int | None = None):
        super().__init__(f"{path}: {failure.value}: {detail}")
        self.failure = failure
        self.path = path
        self.detail = detail
        self.size = size


class FileSystem(Protocol):
    """The filesystem as the contract needs it. Paths are absolute native strings.

    A path that is not native absolute for ``flavour`` (``domain.paths``) is refused: by the
    reads with ``StableReadError(INVALID_PATH)``, by every other method with ``ValueError``.
    """

    @property
    def flavour(self) -> PathFlavour: ...

    def read_stable(self, path: str, *, max_bytes: int) -> StableRead:
        """Read a regular, non-symlink file through one pinned descriptor.

        Raises ``StableReadError``: ``TOO_LARGE`` (with ``size``) without reading the content
        when the file is longer than ``max_bytes``; ``MISSING``, ``SYMLINK``, ``NOT_REGULAR``
        (never blocking on a FIFO or device), ``CHANGED`` when identity, size, mtime or ctime
        moved between the checks (also when the path vanished or was replaced between ``lstat``
        and open, or when more bytes arrived than were measured), ``INVALID_PATH`` for a path
        that is not native absolute, ``UNREADABLE`` otherwise (including an identity the
        platform cannot vouch for, such as a zero file index on Windows).
        """
        ...

    def digest_stable(self, path: str, *, expected_size: int | None = None) -> StableDigest:
        """Like ``read_stable`` but streams the file through SHA-256 in bounded memory.

        With ``expected_size``, a file whose pinned descriptor measures another size is
        ``StableReadError(SIZE_MISMATCH)`` (with ``size``) before a single byte is read, so a
        huge or sparse file declared small is refused at once, never hashed.
        """
        ...

    def make_dir_exclusive(self, path: str, mode: int) -> None:
        """Create one directory; ``FileExistsError`` if anything is there already."""
        ...

    def ensure_dir(self, path: str, mode: int) -> None:
        """Create a directory and its parents if missing (used for the squad root only)."""
        ...

    def create_file_exclusive(self, path: str, data: bytes, mode: int) -> None:
        """Create a new file with exactly ``mode`` where the platform has modes (never replacing
        anything, not even a dangling symlink: ``FileExistsError``), write ``data``, fsync it.
        A partially written file is removed before the error propagates."""
        ...

    def write_atomic(self, path: str, data: bytes) -> None:
        """Same-directory temp file (mode ``0600``), fsync, ``os.replace``, fsync the
        directory. The temp file is removed if any step before the replace fails."""
        ...

    def fsync_dir(self, path: str) -> None:
        """Make the directory's entries durable; a no-op on Windows, which cannot."""
        ...

    def remove_temporaries(self, path: str) -> int:
        """Remove the temp files ``write_atomic`` left beside ``path`` (its writer died between
        the temp file and the replace); how many (0 when the directory is missing too). Call
        only holding the lock every writer of ``path`` holds, so that no live writer's temp
        file is among them."""
        ...

    def rename_no_replace(self, source: str, target: str) -> None:
        """Rename ``source`` to ``target``; ``FileExistsError`` if ``target`` exists, even an
        empty directory. Never merges or replaces."""
        ...

    def mark_read_only(self, path: str) -> None:
        """Mode ``0400`` on POSIX; the read-only attribute on Windows (best effort)."""
        ...

    def list_dir(self, path: str) -> list[str]:
        """Entry names, sorted; ``FileNotFoundError`` if the directory is missing."""
        ...

    def is_dir(self, path: str) -> bool:
        """True for a real directory (a symlink to one is not)."""
        ...

    def exists(self, path: str) -> bool:
        """True if anything, a dangling symlink included, is at ``path``."""
        ...

    def regular_file(self, path: str) -> FileIdentity:
        """The identity of the regular, non-symlink file at ``path``, opened as ``read_stable``
        opens it (never blocking on a FIFO or device, never following a final link) and checked
        by ``fstat``, without reading a byte. Raises ``StableReadError`` as ``read_stable``
        does (``MISSING``, ``SYMLINK``, ``NOT_REGULAR``, ``CHANGED``, ``UNREADABLE``, ...)."""
        ...

    def reclaim_access(self, path: str, mode: int) -> bool:
        """Give back to the owner the permission bits of ``mode`` that the file or directory at
        ``path`` lacks (``0o600`` for a record, ``0o700`` for a directory), when this process
        owns it: the repair for a child that ``chmod``-ed an entry the parent must read (the
        kernel isolation governs writes, not modes). Only adds bits, never through a symbolic
        link, never on another owner's entry. ``True`` when a mode was changed; ``False`` when
        nothing needed to be, or nothing could be (missing, a link, another owner, a platform
        without POSIX modes)."""
        ...

    def read_small(self, path: str, max_bytes: int) -> bytes:
        """Read a state file the project itself wrote (same refusals as ``read_stable``)."""
        ...

    def identity(self, path: str) -> FileIdentity | None:
        """``lstat`` identity of whatever is at ``path``, ``None`` when nothing is. Cheap: the
        guard compares it on every tool call to decide whether a full re-verification is due."""
        ...

    def clock_reading(self, path: str) -> FileIdentity | None:
        """Set the times of the regular file at ``path`` to now (creating it empty, mode
        ``0600``, when nothing is there) and return its identity, whose ``ctime_ns`` is then a
        reading of the file system's own change clock: any change made on that file system
        after this call carries a ctime at least as late. ``None`` when no reading can be
        taken (a read-only or missing directory, a symbolic link or non-file at ``path``, or a
        platform whose ctime is not the change time: Windows)."""
        ...

    def append_bytes(self, path: str, data: bytes) -> None:
        """Append to a file (created with 0600 if missing, never through a symlink) and fsync.

        Appends start a new line: when the file is non-empty and its last byte (read through
        the opened descriptor) is not ``\\n``, a ``\\n`` is written before ``data``, so a torn
        last line of a JSON-lines file never swallows the record appended after it.
        """
        ...

    def remove_file(self, path: str) -> None:
        """Unlink one file; missing is fine."""
        ...

    def remove_tree(self, path: str) -> None:
        """Remove a directory tree the project created; never follows symlinks out of it.

        A missing tree is not an error. A symlink at ``path`` itself raises ``OSError``."""
        ...
