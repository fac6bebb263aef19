"""``LockFactory`` over ``fasteners`` inter-process locks (``fcntl``/``LockFileEx``).

The operating system releases such a lock when its holder dies, so a crashed process never
leaves a stale lock behind. POSIX record locks belong to a process, not a thread, so a
process-local lock per path serialises the threads of one process as well.

``try_lock`` counts a lock as taken only if, once locked, the file it locked is still the one
its path names. A lock file may be unlinked by whoever holds it (the staging-lock sweep does);
a process that opened the file just before and locked it just after would otherwise hold a
lock on a file nobody else can see, while the next process to open the path creates a new
file and takes "the same" lock too.

A lock file may lie where a child can write (a task's ``.spec-read.lock`` is in its ledger
directory), so on POSIX it is never trusted to be one: anything but a regular file at the path
is refused (``LockRefused``) before it is opened, and the open itself neither follows a link
(``O_NOFOLLOW``: a symlinked lock would have the unconfined parent create a file outside every
grant) nor waits (``O_NONBLOCK``: a FIFO would block ``open(2)`` forever); ``fstat`` confirms a
regular file before the lock is taken.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import struct
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import fasteners

if sys.platform != "win32":
    import fcntl

from adapters.fs.stable_read import kind_of
from application.ports import LockFactory, LockRefused, held_lock, lock_timeout, tried_lock

_registry_guard = threading.Lock()
_thread_locks: dict[str, threading.Lock] = {}


def _thread_lock(path: str) -> threading.Lock:
    key = os.path.abspath(path)
    with _registry_guard:
        return _thread_locks.setdefault(key, threading.Lock())


class FastenersLockFactory:
    def __init__(self, poll_interval: float = 0.002) -> None:
        self._poll_interval = poll_interval

    @contextmanager
    def lock(self, path: str, *, timeout: float = 10.0) -> Iterator[None]:
        deadline = time.monotonic() + timeout
        local = _thread_lock(path)
        with held_lock(local.acquire(timeout=timeout), local.release, path, timeout):
            if sys.platform == "win32":
                with self._fasteners_lock(path, deadline, timeout):
                    yield
            else:
                descriptor = _locked_descriptor(path, deadline, self._poll_interval, timeout)
                try:
                    yield
                finally:
                    _unlock_and_close(descriptor)

    @contextmanager
    def _fasteners_lock(self, path: str, deadline: float, timeout: float) -> Iterator[None]:
        _ensure_lock_dir(path)
        lock = fasteners.InterProcessLock(path)
        remaining = max(0.0, deadline - time.monotonic())
        taken = lock.acquire(blocking=True, delay=self._poll_interval, timeout=remaining)
        with held_lock(taken, lock.release, path, timeout):
            yield

    @contextmanager
    def try_lock(self, path: str) -> Iterator[bool]:
        local = _thread_lock(path)
        if not local.acquire(blocking=False):
            yield False
            return
        try:
            if sys.platform == "win32":
                with self._fasteners_try_lock(path) as taken:
                    yield taken
                return
            descriptor = _open_lock_file(path)
            taken = _lock_now(descriptor) and _still_named_by(path, descriptor)
            try:
                yield taken
            finally:
                if taken:
                    _unlock_and_close(descriptor)
                else:
                    os.close(descriptor)
        finally:
            local.release()

    @contextmanager
    def _fasteners_try_lock(self, path: str) -> Iterator[bool]:
        _ensure_lock_dir(path)
        lock = fasteners.InterProcessLock(path)
        taken = bool(lock.acquire(blocking=False))
        if taken and not _still_named_by(path, lock.lockfile.fileno()):
            lock.release()
            taken = False
        with tried_lock(taken, lock.release):
            yield taken

    def discard(self, path: str) -> None:
        """Unlink the lock file. Missing is fine, and so is a file Windows refuses to unlink
        because some process has it open: whoever unlinks it later finds it unused."""
        with contextlib.suppress(FileNotFoundError, PermissionError):
            os.unlink(path)

    def is_held(self, path: str) -> bool | None:
        """Linux: ``F_GETLK`` asks the kernel whether any process holds a record lock on the
        file, without taking one. Elsewhere ``None``: ``struct flock`` is laid out per platform,
        and taking the lock to find out would make a driver's ``try_lock`` fail meanwhile.

        This process's own holders are known through the per-path thread lock, and it is held
        while asking: POSIX drops every lock a process holds on a file when it closes any
        descriptor of that file, so the query's descriptor must never be closed while one of
        this process's threads holds (or takes) the lock."""
        if not sys.platform.startswith("linux"):
            return None
        local = _thread_lock(path)
        if not local.acquire(blocking=False):
            return True
        try:
            try:
                descriptor = os.open(path, _QUERY_FLAGS)
            except FileNotFoundError:
                return False
            except OSError:
                return None  # a link, or nothing a lock can be held on: cannot tell
            try:
                if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                    return None
                query = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
                answer = fcntl.fcntl(descriptor, fcntl.F_GETLK, query)
            finally:
                os.close(descriptor)
            return bool(struct.unpack(_FLOCK, answer)[0] != fcntl.F_UNLCK)
        finally:
            local.release()


# Linux ``struct flock``: l_type, l_whence (short), l_start, l_len (off_t), l_pid (pid_t), padded.
_FLOCK = "hhqqi4x"


def _still_named_by(path: str, descriptor: int) -> bool:
    """Whether ``path`` still names the file open as ``descriptor`` (not unlinked, replaced or
    swapped for a link)."""
    try:
        named = os.lstat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(descriptor)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


_NEVER_FOLLOW_OR_WAIT = (
    getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
# The record lock ``fasteners`` takes on POSIX (``lockf`` on a descriptor opened for append),
# taken directly: every store transaction and every spec-read commit takes one, and
# ``fasteners`` re-creates the lock's directory tree and opens the file through ``io`` each
# time (about 0.2 ms of a 1.5 ms commit). The same lock, so both kinds of holder exclude each
# other (Windows still goes through ``fasteners``).
_LOCK_FILE_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NEVER_FOLLOW_OR_WAIT
_QUERY_FLAGS = os.O_RDONLY | _NEVER_FOLLOW_OR_WAIT
_MAX_POLL_SECONDS = 0.1  # fasteners' default ``max_delay``
_LOCK_FILE_MODE = 0o666  # what ``fasteners`` (``open(path, "a")``) creates: the umask applies
# How an open with those flags says the path is no lock file: a final symbolic link (ELOOP;
# FreeBSD: EMLINK), a FIFO without a reader or a socket (ENXIO), a directory (EISDIR), a device
# without a driver (ENODEV).
_REFUSED_OPENS = {
    errno.ELOOP: "a symbolic link",
    errno.EMLINK: "a symbolic link",
    errno.ENXIO: "a FIFO or socket",
    errno.EISDIR: "a directory",
    errno.ENODEV: "a device",
}


def _refused(path: str, kind: str) -> LockRefused:
    return LockRefused(errno.EINVAL, f"the lock file is {kind}, not a regular file", path)


def _open_lock_file(path: str) -> int:
    """A descriptor on the regular lock file at ``path`` (created if missing), or
    ``LockRefused``: anything else there is examined by ``lstat`` and never opened, and one
    swapped in after it is neither followed nor waited on, and fails the ``fstat``."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        _ensure_lock_dir(path)
    else:
        if not stat.S_ISREG(found.st_mode):
            raise _refused(path, kind_of(found.st_mode))
    try:
        descriptor = os.open(path, _LOCK_FILE_FLAGS, _LOCK_FILE_MODE)
    except OSError as error:
        kind = _REFUSED_OPENS.get(error.errno or 0)
        if kind is None:
            raise
        raise _refused(path, kind) from None
    try:
        opened = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(opened):
            raise _refused(path, kind_of(opened))
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def _lock_now(descriptor: int) -> bool:
    try:
        fcntl.lockf(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except (BlockingIOError, PermissionError):  # EAGAIN or EACCES: another holder
        return False
    return True


def _locked_descriptor(path: str, deadline: float, poll_interval: float, timeout: float) -> int:
    descriptor = _open_lock_file(path)
    delay = poll_interval
    try:
        while not _lock_now(descriptor):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise lock_timeout(path, timeout)
            time.sleep(min(delay, remaining))
            # Backing off as fasteners does: a long hold is not polled every 2 ms.
            delay = min(delay * 2, _MAX_POLL_SECONDS)
        return descriptor
    except BaseException:
        os.close(descriptor)
        raise


def _unlock_and_close(descriptor: int) -> None:
    try:
        fcntl.lockf(descriptor, fcntl.LOCK_UN)
    finally:
        os.close(descriptor)


def _ensure_lock_dir(path: str) -> None:
    # Lock files live beside private state; their directory is as private as the state.
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)


_conforms: type[LockFactory] = FastenersLockFactory
