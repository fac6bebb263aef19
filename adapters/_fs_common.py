"""What the POSIX and Windows file systems share: stable reads and publication steps.

``NativeFileSystem`` implements every ``FileSystem`` method once. The two adapters differ only
in the hooks it calls: the open flags, how a link is recognised at ``lstat`` time, whether an
identity can be trusted, how a mode is applied, how a directory is fsynced and how a rename
refuses an existing target.

Stable read (contract §5), for ``read_stable``, ``read_small`` and ``digest_stable``:

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

Crash tests inject their faults from outside, through a wrapper of the port
(``tests/fakes/filesystem.FaultingFileSystem``); the adapters have no fault seam of their own.

Metadata checks cannot see an in-place rewrite of identical length that lands within one
timestamp tick of the previous write; the caller-supplied SHA-256 is what catches that.
"""

from __future__ import annotations

import abc
import contextlib
import errno
import hashlib
import os
import secrets
import shutil
import stat
import sys
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any, ClassVar

from application.ports import (
    FileIdentity,
    PathFlavour,
    ReadFailure,
    StableDigest,
    StableRead,
    StableReadError,
)
from domain.paths import absolute_path_problem

READ_BLOCK_BYTES = 1 << 20
ATOMIC_FILE_MODE = 0o600


def identity_of(status: os.stat_result) -> FileIdentity:
    return FileIdentity(
        device=status.st_dev,
        inode=status.st_ino,
        size=status.st_size,
        mtime_ns=status.st_mtime_ns,
        ctime_ns=status.st_ctime_ns,
    )


def _kind(mode: int) -> str:
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


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(descriptor, view)
        view = view[written:]


def _byte_at(descriptor: int, offset: int) -> bytes:
    """One byte at ``offset`` of an open file, through the descriptor's own offset (a seek and
    a read: portable, and ``O_APPEND`` still sends the next write to the end)."""
    os.lseek(descriptor, offset, os.SEEK_SET)
    return os.read(descriptor, 1)


class NativeFileSystem(abc.ABC):
    """The shared implementation of ``application.ports.FileSystem``; subclass per platform."""

    FLAVOUR: ClassVar[PathFlavour]
    READ_FLAGS: ClassVar[int]
    CREATE_FLAGS: ClassVar[int]
    # errno values with which the read open reports that the final component is a link.
    SYMLINK_OPEN_ERRNOS: ClassVar[frozenset[int]] = frozenset()

    @property
    def flavour(self) -> PathFlavour:
        return self.FLAVOUR

    # ---- platform hooks -------------------------------------------------------------------

    @abc.abstractmethod
    def _refuse_platform_link(self, path: str, status: os.stat_result) -> None:
        """Raise ``StableReadError`` for links ``S_ISLNK`` does not reveal (Windows)."""

    def _is_link_like(self, status: os.stat_result) -> bool:
        return stat.S_ISLNK(status.st_mode)

    @abc.abstractmethod
    def _refuse_uncertain_identity(self, path: str, status: os.stat_result) -> None:
        """Raise ``StableReadError`` when an ``fstat`` cannot pin the file (Windows)."""

    @abc.abstractmethod
    def _refuse_existing_before_create(self, path: str) -> None:
        """Raise ``FileExistsError`` where exclusive creation alone would not (Windows)."""

    @abc.abstractmethod
    def _apply_dir_mode(self, path: str, mode: int) -> None: ...

    @abc.abstractmethod
    def _apply_file_mode(self, descriptor: int, mode: int) -> None: ...

    @abc.abstractmethod
    def _fsync_dir(self, path: str) -> None: ...

    @abc.abstractmethod
    def _rename_no_replace(self, source: str, target: str) -> None: ...

    @abc.abstractmethod
    def _mark_read_only(self, path: str) -> None: ...

    def _retry_removal(self, function_name: str, path: str, error: BaseException) -> bool:
        """Called when ``remove_tree`` fails on one entry; ``True`` if it fixed and retried."""
        return False

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

    def make_dir_exclusive(self, path: str, mode: int) -> None:
        self._require_absolute(path)
        os.mkdir(path, mode)
        self._apply_dir_mode(path, mode)

    def ensure_dir(self, path: str, mode: int) -> None:
        self._require_absolute(path)
        os.makedirs(path, mode, exist_ok=True)

    def create_file_exclusive(self, path: str, data: bytes, mode: int) -> None:
        self._require_absolute(path)
        self._refuse_existing_before_create(path)
        descriptor = os.open(path, self.CREATE_FLAGS, mode)
        try:
            try:
                self._apply_file_mode(descriptor, mode)
                _write_all(descriptor, data)
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
        except BaseException:
            # O_EXCL proved the file is ours, so a partial one is ours to remove.
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise

    def write_atomic(self, path: str, data: bytes) -> None:
        self._require_absolute(path)
        directory, name = os.path.split(path)
        temporary = os.path.join(directory, f".{name}.tmp.{os.getpid()}.{secrets.token_hex(8)}")
        try:
            descriptor = os.open(temporary, self.CREATE_FLAGS, ATOMIC_FILE_MODE)
            try:
                self._apply_file_mode(descriptor, ATOMIC_FILE_MODE)
                _write_all(descriptor, data)
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        self._fsync_dir(directory)

    def fsync_dir(self, path: str) -> None:
        self._require_absolute(path)
        self._fsync_dir(path)

    def rename_no_replace(self, source: str, target: str) -> None:
        self._require_absolute(source)
        self._require_absolute(target)
        self._rename_no_replace(source, target)

    def mark_read_only(self, path: str) -> None:
        self._require_absolute(path)
        self._mark_read_only(path)

    def list_dir(self, path: str) -> list[str]:
        self._require_absolute(path)
        return sorted(os.listdir(path))

    def is_dir(self, path: str) -> bool:
        self._require_absolute(path)
        try:
            status = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return False
        return stat.S_ISDIR(status.st_mode) and not self._is_link_like(status)

    def exists(self, path: str) -> bool:
        self._require_absolute(path)
        try:
            os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return False
        return True

    def read_small(self, path: str, max_bytes: int) -> bytes:
        return self._read_stable(path, max_bytes).data

    def identity(self, path: str) -> FileIdentity | None:
        self._require_absolute(path)
        try:
            status = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        return identity_of(status)

    def append_bytes(self, path: str, data: bytes) -> None:
        self._require_absolute(path)
        # Read-write, so the last byte is read through this very descriptor (no second
        # open of the path); O_APPEND still puts every write at the end.
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
        descriptor = os.open(path, flags, ATOMIC_FILE_MODE)
        try:
            size = os.fstat(descriptor).st_size
            if size and _byte_at(descriptor, size - 1) != b"\n":
                # A torn last line (a writer died mid-append): end it, or the record
                # appended now would be glued onto it and lost with it.
                data = b"\n" + data
            _write_all(descriptor, data)
            os.fsync(descriptor)
        finally:
            os.close(descriptor)

    def remove_file(self, path: str) -> None:
        self._require_absolute(path)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)

    def remove_tree(self, path: str) -> None:
        """Idempotent: a missing tree is already removed. A symlink at ``path`` is refused
        (``OSError``) and links inside the tree are unlinked, never followed."""
        self._require_absolute(path)
        try:
            os.lstat(path)
        except FileNotFoundError:
            return

        def on_error(function: Callable[..., Any], failed: str, error: BaseException) -> None:
            if isinstance(error, FileNotFoundError):
                return  # removed concurrently: the goal is reached for that entry
            if not self._retry_removal(getattr(function, "__name__", ""), failed, error):
                raise error

        if sys.version_info >= (3, 12):
            shutil.rmtree(path, onexc=on_error)
        else:

            def on_error_info(
                function: Callable[..., Any],
                failed: str,
                info: tuple[type[BaseException], BaseException, TracebackType],
            ) -> None:
                on_error(function, failed, info[1])

            shutil.rmtree(path, onerror=on_error_info)

    # ---- the stable read ------------------------------------------------------------------

    def _require_absolute(self, path: str) -> None:
        problem = absolute_path_problem(path, self.FLAVOUR)
        if problem is not None:
            raise ValueError(f"not a native absolute {self.FLAVOUR} path: {problem}")

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
        problem = absolute_path_problem(path, self.FLAVOUR)
        if problem is not None:
            raise StableReadError(ReadFailure.INVALID_PATH, path, problem)
        examined = self._lstat(path)
        if stat.S_ISLNK(examined.st_mode):
            raise StableReadError(
                ReadFailure.SYMLINK, path, "the final component is a symbolic link"
            )
        self._refuse_platform_link(path, examined)
        if not stat.S_ISREG(examined.st_mode):
            raise StableReadError(ReadFailure.NOT_REGULAR, path, f"it is {_kind(examined.st_mode)}")
        descriptor = self._open_mapped(path)
        try:
            opened = self._fstat(path, descriptor)
            if not stat.S_ISREG(opened.st_mode):
                raise StableReadError(
                    ReadFailure.NOT_REGULAR,
                    path,
                    f"after lstat the path opened {_kind(opened.st_mode)}; nothing was read",
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
