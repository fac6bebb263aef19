"""What the POSIX and Windows file systems share: stable reads, publication steps, fault seam.

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

Fault seam: ``PI_SQUAD_FAULT=<operation>:<n>:<action>`` (read once, when the adapter is built
by ``from_environment``) acts on the ``n``-th call of one ``FileSystem`` method: ``kill``
sends SIGKILL before the operation, ``kill-after`` after it succeeded, ``oserror`` raises
``OSError(EIO)`` before it (for the read methods too, so a test sees a raw I/O failure).
Calls a method makes internally (``write_atomic`` syncing its directory) are not counted.

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
import signal
import stat
import sys
import threading
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any, ClassVar, Literal, Self

import attrs

from application.ports import (
    FileIdentity,
    PathFlavour,
    ReadFailure,
    StableDigest,
    StableRead,
    StableReadError,
)
from domain.paths import absolute_path_problem

FAULT_ENVIRONMENT_VARIABLE = "PI_SQUAD_FAULT"
FaultAction = Literal["kill", "kill-after", "oserror"]
_FAULT_ACTIONS: dict[str, FaultAction] = {
    "kill": "kill",
    "kill-after": "kill-after",
    "oserror": "oserror",
}
# Every FileSystem method can be targeted, so a crash test can stop at any step it names.
FAULTABLE_OPERATIONS: frozenset[str] = frozenset(
    {
        "read_stable",
        "digest_stable",
        "make_dir_exclusive",
        "ensure_dir",
        "create_file_exclusive",
        "write_atomic",
        "fsync_dir",
        "rename_no_replace",
        "mark_read_only",
        "list_dir",
        "is_dir",
        "exists",
        "read_small",
        "remove_tree",
        "identity",
        "append_bytes",
        "remove_file",
    }
)

READ_BLOCK_BYTES = 1 << 20
ATOMIC_FILE_MODE = 0o600


@attrs.frozen
class FaultPoint:
    """``<operation>:<n>:<action>``: act on the ``n``-th call (1-based) of ``operation``."""

    operation: str
    call_number: int
    action: FaultAction

    @classmethod
    def parse(cls, text: str) -> FaultPoint:
        # A malformed fault point is an error, never ignored: a crash test that silently ran
        # without its crash would pass for the wrong reason.
        parts = text.split(":")
        if len(parts) != 3:
            raise ValueError(f"{FAULT_ENVIRONMENT_VARIABLE} must be <operation>:<n>:<action>")
        operation, number, action = parts
        if operation not in FAULTABLE_OPERATIONS:
            raise ValueError(f"{FAULT_ENVIRONMENT_VARIABLE}: unknown operation {operation!r}")
        if not number.isdecimal() or int(number) < 1:
            raise ValueError(f"{FAULT_ENVIRONMENT_VARIABLE}: call number must be an integer >= 1")
        if action not in _FAULT_ACTIONS:
            raise ValueError(
                f"{FAULT_ENVIRONMENT_VARIABLE}: action must be one of {sorted(_FAULT_ACTIONS)}"
            )
        return cls(operation, int(number), _FAULT_ACTIONS[action])


def _kill_self() -> None:
    # SIGKILL cannot be caught, so no finally block or atexit handler tidies up: exactly the
    # state a power cut or OOM kill leaves. Windows has no SIGKILL; os.kill there terminates.
    kill_signal: int = getattr(signal, "SIGKILL", signal.SIGTERM)
    os.kill(os.getpid(), kill_signal)
    os._exit(137)  # only reached where the signal is delivered asynchronously


class FaultInjector:
    """Counts the calls of the configured operation and fires its fault on the n-th one."""

    def __init__(self, point: FaultPoint | None) -> None:
        self._point = point
        self._calls = 0
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def around(self, operation: str) -> Iterator[None]:
        point = self._point
        if point is None or point.operation != operation:
            yield
            return
        with self._lock:
            self._calls += 1
            armed = self._calls == point.call_number
        if armed and point.action == "kill":
            _kill_self()
        if armed and point.action == "oserror":
            raise OSError(errno.EIO, "injected fault", operation)
        yield
        if armed and point.action == "kill-after":
            _kill_self()


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

    def __init__(self, fault_point: str | None = None) -> None:
        self._faults = FaultInjector(None if fault_point is None else FaultPoint.parse(fault_point))

    @classmethod
    def from_environment(cls) -> Self:
        """The adapter with the fault point read once from ``PI_SQUAD_FAULT`` (unset or empty:
        none)."""
        return cls(fault_point=os.environ.get(FAULT_ENVIRONMENT_VARIABLE) or None)

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
        with self._faults.around("read_stable"):
            return self._read_stable(path, max_bytes)

    def digest_stable(self, path: str, *, expected_size: int | None = None) -> StableDigest:
        with self._faults.around("digest_stable"):
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
            return StableDigest(
                path=path, size=received, sha256=digest.hexdigest(), identity=identity
            )

    def make_dir_exclusive(self, path: str, mode: int) -> None:
        with self._faults.around("make_dir_exclusive"):
            self._require_absolute(path)
            os.mkdir(path, mode)
            self._apply_dir_mode(path, mode)

    def ensure_dir(self, path: str, mode: int) -> None:
        with self._faults.around("ensure_dir"):
            self._require_absolute(path)
            os.makedirs(path, mode, exist_ok=True)

    def create_file_exclusive(self, path: str, data: bytes, mode: int) -> None:
        with self._faults.around("create_file_exclusive"):
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
        with self._faults.around("write_atomic"):
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
        with self._faults.around("fsync_dir"):
            self._require_absolute(path)
            self._fsync_dir(path)

    def rename_no_replace(self, source: str, target: str) -> None:
        with self._faults.around("rename_no_replace"):
            self._require_absolute(source)
            self._require_absolute(target)
            self._rename_no_replace(source, target)

    def mark_read_only(self, path: str) -> None:
        with self._faults.around("mark_read_only"):
            self._require_absolute(path)
            self._mark_read_only(path)

    def list_dir(self, path: str) -> list[str]:
        with self._faults.around("list_dir"):
            self._require_absolute(path)
            return sorted(os.listdir(path))

    def is_dir(self, path: str) -> bool:
        with self._faults.around("is_dir"):
            self._require_absolute(path)
            try:
                status = os.lstat(path)
            except (FileNotFoundError, NotADirectoryError):
                return False
            return stat.S_ISDIR(status.st_mode) and not self._is_link_like(status)

    def exists(self, path: str) -> bool:
        with self._faults.around("exists"):
            self._require_absolute(path)
            try:
                os.lstat(path)
            except (FileNotFoundError, NotADirectoryError):
                return False
            return True

    def read_small(self, path: str, max_bytes: int) -> bytes:
        with self._faults.around("read_small"):
            return self._read_stable(path, max_bytes).data

    def identity(self, path: str) -> FileIdentity | None:
        with self._faults.around("identity"):
            self._require_absolute(path)
            try:
                status = os.lstat(path)
            except (FileNotFoundError, NotADirectoryError):
                return None
            return identity_of(status)

    def append_bytes(self, path: str, data: bytes) -> None:
        with self._faults.around("append_bytes"):
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
        with self._faults.around("remove_file"):
            self._require_absolute(path)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)

    def remove_tree(self, path: str) -> None:
        """Idempotent: a missing tree is already removed. A symlink at ``path`` is refused
        (``OSError``) and links inside the tree are unlinked, never followed."""
        with self._faults.around("remove_tree"):
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
