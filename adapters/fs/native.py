"""What the POSIX and Windows file systems share: one ``FileSystem`` with platform hooks.

``NativeFileSystem`` implements every ``FileSystem`` method once: the stable reads it inherits
from ``StableReader`` (``adapters/fs/stable_read.py``), the publication steps are here. The two
adapters differ only in the hooks it calls: the open flags, how a link is recognised at
``lstat`` time, whether an identity can be trusted, how a mode is applied, how a directory is
fsynced and how a rename refuses an existing target.

Crash tests inject their faults from outside, through a wrapper of the port
(``tests/fakes/faulting_filesystem.FaultingFileSystem``); the adapters have no fault seam of
their own.
"""

from __future__ import annotations

import abc
import contextlib
import errno
import os
import secrets
import stat
import sys
from collections.abc import Callable
from types import TracebackType
from typing import Any, ClassVar

from adapters.fs.stable_read import StableReader, identity_of, path_problem
from application.ports import FileIdentity, PathFlavour

ATOMIC_FILE_MODE = 0o600


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


class NativeFileSystem(StableReader):
    """The shared implementation of ``application.ports.FileSystem``; subclass per platform."""

    CREATE_FLAGS: ClassVar[int]
    # Whether ``st_ctime`` is the time of the last change (``clock_reading`` needs that).
    CTIME_IS_CHANGE_TIME: ClassVar[bool] = True

    @property
    def flavour(self) -> PathFlavour:
        return self.FLAVOUR

    # ---- platform hooks -------------------------------------------------------------------

    def _is_link_like(self, status: os.stat_result) -> bool:
        return stat.S_ISLNK(status.st_mode)

    @abc.abstractmethod
    def _refuse_existing_before_create(self, path: str) -> None:
        """Raise ``FileExistsError`` where exclusive creation alone would not (Windows)."""

    @abc.abstractmethod
    def _apply_dir_mode(self, path: str, mode: int) -> None: ...

    @abc.abstractmethod
    def _apply_file_mode(self, descriptor: int, mode: int) -> None: ...

    @abc.abstractmethod
    def _fsync_dir(self, path: str) -> None: ...

    def _rename_no_replace(self, source: str, target: str) -> None:
        """Refuse an existing ``target``, then rename: what a platform without an atomic
        no-replace rename can do (one appearing in between is replaced)."""
        if os.path.lexists(target):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), target)
        os.rename(source, target)

    @abc.abstractmethod
    def _mark_read_only(self, path: str) -> None: ...

    @abc.abstractmethod
    def _reclaim_access(self, path: str, mode: int) -> bool: ...

    def _retry_removal(self, function_name: str, path: str, error: BaseException) -> bool:
        """Called when ``remove_tree`` fails on one entry; ``True`` if it fixed and retried."""
        return False

    # ---- FileSystem -----------------------------------------------------------------------

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
            self._fill_and_close(descriptor, data, mode)
        except BaseException:
            # O_EXCL proved the file is ours, so a partial one is ours to remove.
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise

    def write_atomic(self, path: str, data: bytes) -> None:
        self._require_absolute(path)
        directory, name = os.path.split(path)
        temporary = os.path.join(
            directory, f"{_temporary_prefix(name)}{os.getpid()}.{secrets.token_hex(8)}"
        )
        try:
            descriptor = os.open(temporary, self.CREATE_FLAGS, ATOMIC_FILE_MODE)
            self._fill_and_close(descriptor, data, ATOMIC_FILE_MODE)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        self._fsync_dir(directory)

    def fsync_dir(self, path: str) -> None:
        self._require_absolute(path)
        self._fsync_dir(path)

    def remove_temporaries(self, path: str) -> int:
        self._require_absolute(path)
        directory, name = os.path.split(path)
        prefix = _temporary_prefix(name)
        try:
            entries = os.listdir(directory)
        except FileNotFoundError:
            return 0  # no directory, no temp files
        removed = 0
        for entry in entries:
            if not entry.startswith(prefix):
                continue
            candidate = os.path.join(directory, entry)
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISREG(os.lstat(candidate).st_mode):
                    os.unlink(candidate)
                    removed += 1
        return removed

    def rename_no_replace(self, source: str, target: str) -> None:
        self._require_absolute(source)
        self._require_absolute(target)
        self._rename_no_replace(source, target)

    def mark_read_only(self, path: str) -> None:
        self._require_absolute(path)
        self._mark_read_only(path)

    def reclaim_access(self, path: str, mode: int) -> bool:
        self._require_absolute(path)
        return self._reclaim_access(path, mode)

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

    def identity(self, path: str) -> FileIdentity | None:
        self._require_absolute(path)
        try:
            status = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        return identity_of(status)

    def clock_reading(self, path: str) -> FileIdentity | None:
        self._require_absolute(path)
        if not self.CTIME_IS_CHANGE_TIME:
            return None
        try:
            try:
                # Times set to now: the file system stamps the ctime from its own clock.
                os.utime(path, follow_symlinks=False)
            except FileNotFoundError:
                # The first reading here: a new file's ctime is its creation. A concurrent
                # creator's file serves as well (its ctime is as recent).
                with contextlib.suppress(FileExistsError):
                    os.close(os.open(path, self.CREATE_FLAGS, ATOMIC_FILE_MODE))
            status = os.lstat(path)
        except OSError:
            return None
        if not stat.S_ISREG(status.st_mode) or self._is_link_like(status):
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
        # Imported here: no child's bridge removes a tree, and ``shutil`` is ~3 ms of its start.
        import shutil  # noqa: PLC0415

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

    # ---- shared steps -----------------------------------------------------------------------

    def _fill_and_close(self, descriptor: int, data: bytes, mode: int) -> None:
        """A file just created: its mode, all of ``data``, an fsync; the descriptor is closed."""
        try:
            self._apply_file_mode(descriptor, mode)
            _write_all(descriptor, data)
            os.fsync(descriptor)
        finally:
            os.close(descriptor)

    def _require_absolute(self, path: str) -> None:
        problem = path_problem(path, self.FLAVOUR)
        if problem is not None:
            raise ValueError(f"not a native absolute {self.FLAVOUR} path: {problem}")


def _temporary_prefix(name: str) -> str:
    """The name ``write_atomic``'s temp files for ``name`` start with (pid and random follow)."""
    return f".{name}.tmp."
