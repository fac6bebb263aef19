"""The stable read (contract §5) that the POSIX and Windows file systems share.

``StableReader`` implements ``read_stable``, ``read_small`` and ``digest_stable`` once; a
platform subclass supplies the open flags and says which links and identities it refuses.

The steps:

1. the path must be native absolute for the adapter's flavour (``INVALID_PATH``);
2. ``lstat`` the final component: a symlink (or, on Windows, any reparse point) is ``SYMLINK``,
   anything but a regular file is ``NOT_REGULAR``; a missing path is ``MISSING``;
3. open read-only through the adapter's flags (POSIX adds ``O_NOFOLLOW`` and ``O_NONBLOCK``, so
   a symlink or FIFO swapped in after the ``lstat`` cannot be followed or block us);
4. ``fstat`` the descriptor: not regular is ``NOT_REGULAR`` (checked before any read); device,
   inode, size and mtime must equal the ``lstat`` values or it is ``CHANGED``. ctime is left out
   of this one comparison only because the file-system emulator used in tests bumps ctime on
   open; the ``fstat`` taken here is the baseline every later check compares in full;
5. refuse with ``TOO_LARGE`` (carrying the size) before reading a byte if the size exceeds the
   limit; ``digest_stable`` given an expected size refuses any other size the same way, with
   ``SIZE_MISMATCH``;
6. read from the descriptor until end of file, never asking for more than one byte beyond the
   measured size: a byte beyond it means the file grew while it was read, which is ``CHANGED``
   (not ``TOO_LARGE``: the measured size was within the limit, the file moved under us). Memory
   therefore stays bounded by the limit plus one byte even if a writer keeps appending;
7. ``fstat`` again: any change of device, inode, size, mtime or ctime, or a byte count other
   than the measured size, is ``CHANGED``;
8. hash what was read (lowercase SHA-256). The path is never reopened.

Metadata checks cannot see an in-place rewrite of identical length that lands within one
timestamp tick of the previous write; the caller-supplied SHA-256 is what catches that.
"""

from __future__ import annotations

import abc
import errno
import functools
import hashlib
import os
import stat
from collections.abc import Iterator
from typing import ClassVar

from application.ports import (
    FileIdentity,
    PathFlavour,
    ReadFailure,
    StableDigest,
    StableRead,
    StableReadError,
)
from domain.paths import absolute_path_problem

# The path rules are a pure function of the string: a store checks the same few thousand paths
# (task records, ledger directories) on every look, and parsing them each time was a fifth of
# a reconcile pass's CPU.
path_problem = functools.lru_cache(maxsize=8192)(absolute_path_problem)

READ_BLOCK_BYTES = 1 << 20


def identity_of(status: os.stat_result) -> FileIdentity:
    return FileIdentity(
        device=status.st_dev,
        inode=status.st_ino,
        size=status.st_size,
        mtime_ns=status.st_mtime_ns,
        ctime_ns=status.st_ctime_ns,
    )


def kind_of(mode: int) -> str:
    """What a file of ``mode`` is, as a message says it ("a FIFO")."""
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISLNK, "a symbolic link"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _moved(before: FileIdentity, after: FileIdentity, fields: tuple[str, ...]) -> list[str]:
    return [name for name in fields if getattr(before, name) != getattr(after, name)]


_PIN_FIELDS = ("device", "inode", "size", "mtime_ns")
_ALL_FIELDS = ("device", "inode", "size", "mtime_ns", "ctime_ns")


class StableReader(abc.ABC):
    """The stable-read half of ``application.ports.FileSystem``; subclass per platform."""

    FLAVOUR: ClassVar[PathFlavour]
    READ_FLAGS: ClassVar[int]
    # errno values with which the read open reports that the final component is a link.
    SYMLINK_OPEN_ERRNOS: ClassVar[frozenset[int]] = frozenset()

    # ---- platform hooks -------------------------------------------------------------------

    @abc.abstractmethod
    def _refuse_platform_link(self, path: str, status: os.stat_result) -> None:
        """Raise ``StableReadError`` for links ``S_ISLNK`` does not reveal (Windows)."""

    @abc.abstractmethod
    def _refuse_uncertain_identity(self, path: str, status: os.stat_result) -> None:
        """Raise ``StableReadError`` when an ``fstat`` cannot pin the file (Windows)."""

    # ---- seams a test subclass may override to interleave a concurrent change -------------

    def _open_for_read(self, path: str) -> int:
        return os.open(path, self.READ_FLAGS)

    def _read_block(self, descriptor: int, size: int) -> bytes:
        return os.read(descriptor, size)

    # ---- FileSystem -----------------------------------------------------------------------

    def read_stable(self, path: str, *, max_bytes: int) -> StableRead:
        return self._read_stable(path, max_bytes)

    def digest_stable(self, path: str, *, expected_size: int | None = None) -> StableDigest:
        descriptor, identity = self._open_pinned(path)
        try:
            if expected_size is not None and identity.size != expected_size:
                # The size the fstat of the pinned descriptor measured: nothing is read.
                raise StableReadError(
                    ReadFailure.SIZE_MISMATCH,
                    path,
                    f"{identity.size} bytes, {expected_size} expected; nothing was read",
                    size=identity.size,
                )
            digest = hashlib.sha256()
            received = 0
            for block in self._read_to_end(path, descriptor, identity.size):
                digest.update(block)
                received += len(block)
            self._confirm_unchanged(path, descriptor, identity, received)
        finally:
            os.close(descriptor)
        return StableDigest(path=path, size=received, sha256=digest.hexdigest(), identity=identity)

    def read_small(self, path: str, max_bytes: int) -> bytes:
        return self._read_stable(path, max_bytes).data

    def regular_file(self, path: str) -> FileIdentity:
        descriptor, identity = self._open_pinned(path)
        os.close(descriptor)
        return identity

    # ---- the stable read ------------------------------------------------------------------

    def _read_stable(self, path: str, max_bytes: int) -> StableRead:
        descriptor, identity = self._open_pinned(path)
        try:
            if identity.size > max_bytes:
                raise StableReadError(
                    ReadFailure.TOO_LARGE,
                    path,
                    f"{identity.size} bytes, at most {max_bytes} allowed",
                    size=identity.size,
                )
            data = b"".join(self._read_to_end(path, descriptor, identity.size))
            self._confirm_unchanged(path, descriptor, identity, len(data))
        finally:
            os.close(descriptor)
        return StableRead(
            path=path, data=data, identity=identity, sha256=hashlib.sha256(data).hexdigest()
        )

    def _open_pinned(self, path: str) -> tuple[int, FileIdentity]:
        """Steps 1-4: a descriptor on the regular file ``lstat`` vetted, and its identity."""
        problem = path_problem(path, self.FLAVOUR)
        if problem is not None:
            raise StableReadError(ReadFailure.INVALID_PATH, path, problem)
        examined = self._lstat(path)
        if stat.S_ISLNK(examined.st_mode):
            raise StableReadError(
                ReadFailure.SYMLINK, path, "the final component is a symbolic link"
            )
        self._refuse_platform_link(path, examined)
        if not stat.S_ISREG(examined.st_mode):
            raise StableReadError(
                ReadFailure.NOT_REGULAR, path, f"it is {kind_of(examined.st_mode)}"
            )
        descriptor = self._open_mapped(path)
        try:
            opened = self._fstat(path, descriptor)
            if not stat.S_ISREG(opened.st_mode):
                raise StableReadError(
                    ReadFailure.NOT_REGULAR,
                    path,
                    f"after lstat the path opened {kind_of(opened.st_mode)}; nothing was read",
                )
            self._refuse_uncertain_identity(path, opened)
            identity = identity_of(opened)
            moved = _moved(identity_of(examined), identity, _PIN_FIELDS)
            if moved:
                raise StableReadError(
                    ReadFailure.CHANGED,
                    path,
                    f"the opened file differs from the one lstat examined ({', '.join(moved)})",
                )
        except BaseException:
            os.close(descriptor)
            raise
        return descriptor, identity

    def _lstat(self, path: str) -> os.stat_result:
        try:
            return os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            raise StableReadError(ReadFailure.MISSING, path, "no such file") from None
        except ValueError as error:
            raise StableReadError(ReadFailure.INVALID_PATH, path, str(error)) from None
        except OSError as error:
            if error.errno == errno.ENAMETOOLONG:
                raise StableReadError(ReadFailure.INVALID_PATH, path, "name too long") from None
            raise StableReadError(
                ReadFailure.UNREADABLE, path, f"lstat failed: {error.strerror}"
            ) from None

    def _open_mapped(self, path: str) -> int:
        try:
            return self._open_for_read(path)
        except OSError as error:
            number = error.errno
            if number in self.SYMLINK_OPEN_ERRNOS:
                failure, detail = ReadFailure.SYMLINK, "it became a symbolic link after lstat"
            elif number in (errno.ENOENT, errno.ENOTDIR):
                failure, detail = ReadFailure.CHANGED, "it vanished between lstat and open"
            elif number in (errno.ENXIO, errno.ENODEV, errno.EISDIR):
                failure, detail = ReadFailure.NOT_REGULAR, "it cannot be opened as a regular file"
            else:
                failure, detail = ReadFailure.UNREADABLE, f"open failed: {error.strerror}"
            raise StableReadError(failure, path, detail) from None

    def _fstat(self, path: str, descriptor: int) -> os.stat_result:
        try:
            return os.fstat(descriptor)
        except OSError as error:
            raise StableReadError(
                ReadFailure.UNREADABLE, path, f"fstat failed: {error.strerror}"
            ) from None

    def _read_to_end(self, path: str, descriptor: int, expected: int) -> Iterator[bytes]:
        """Yield blocks until end of file; ``CHANGED`` as soon as more than ``expected`` arrive."""
        received = 0
        while True:
            try:
                block = self._read_block(descriptor, min(READ_BLOCK_BYTES, expected + 1 - received))
            except OSError as error:
                raise StableReadError(
                    ReadFailure.UNREADABLE, path, f"read failed: {error.strerror}"
                ) from None
            if not block:
                return
            received += len(block)
            if received > expected:
                raise StableReadError(
                    ReadFailure.CHANGED,
                    path,
                    f"it grew while it was read: more than the {expected} bytes measured arrived",
                )
            yield block

    def _confirm_unchanged(
        self, path: str, descriptor: int, identity: FileIdentity, received: int
    ) -> None:
        moved = _moved(identity, identity_of(self._fstat(path, descriptor)), _ALL_FIELDS)
        if moved:
            raise StableReadError(
                ReadFailure.CHANGED, path, f"{', '.join(moved)} changed while it was read"
            )
        if received != identity.size:
            raise StableReadError(
                ReadFailure.CHANGED,
                path,
                f"{received} bytes were read but the file measured {identity.size}",
            )
