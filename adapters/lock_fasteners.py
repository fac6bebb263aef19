"""``LockFactory`` over ``fasteners`` inter-process locks (``fcntl``/``LockFileEx``).

The operating system releases such a lock when its holder dies, so a crashed process never
leaves a stale lock behind. POSIX record locks belong to a process, not a thread, so a
process-local lock per path serialises the threads of one process as well.

``try_lock`` counts a lock as taken only if, once locked, the file it locked is still the one
its path names. A lock file may be unlinked by whoever holds it (the staging-lock sweep does);
a process that opened the file just before and locked it just after would otherwise hold a
lock on a file nobody else can see, while the next process to open the path creates a new
file and takes "the same" lock too.
"""

from __future__ import annotations

import contextlib
import os
import struct
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import fasteners

if sys.platform != "win32":
    import fcntl

from application.ports import LockFactory, LockTimeout

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
        if not local.acquire(timeout=timeout):
            raise LockTimeout(f"lock {path} not acquired within {timeout} s")
        try:
            if sys.platform == "win32":
                with self._fasteners_lock(path, deadline, timeout):
                    yield
            else:
                descriptor = _locked_descriptor(path, deadline, self._poll_interval, timeout)
                try:
                    yield
                finally:
                    _unlock_and_close(descriptor)
        finally:
            local.release()

    @contextmanager
    def _fasteners_lock(self, path: str, deadline: float, timeout: float) -> Iterator[None]:
        _ensure_lock_dir(path)
        lock = fasteners.InterProcessLock(path)
        remaining = max(0.0, deadline - time.monotonic())
        if not lock.acquire(blocking=True, delay=self._poll_interval, timeout=remaining):
            raise LockTimeout(f"lock {path} not acquired within {timeout} s")
        try:
            yield
        finally:
            lock.release()

    @contextmanager
    def try_lock(self, path: str) -> Iterator[bool]:
        local = _thread_lock(path)
        if not local.acquire(blocking=False):
            yield False
            return
        try:
            _ensure_lock_dir(path)
            lock = fasteners.InterProcessLock(path)
            taken = bool(lock.acquire(blocking=False))
            if taken and not _still_named_by(path, lock):
                lock.release()
                taken = False
            try:
                yield taken
            finally:
                if taken:
                    lock.release()
        finally:
            local.release()

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
                descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            except FileNotFoundError:
                return False
            try:
                query = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
                answer = fcntl.fcntl(descriptor, fcntl.F_GETLK, query)
            finally:
                os.close(descriptor)
            return bool(struct.unpack(_FLOCK, answer)[0] != fcntl.F_UNLCK)
        finally:
            local.release()


# Linux ``struct flock``: l_type, l_whence (short), l_start, l_len (off_t), l_pid (pid_t), padded.
_FLOCK = "hhqqi4x"


def _still_named_by(path: str, lock: fasteners.InterProcessLock) -> bool:
    """Whether ``path`` still names the file ``lock`` holds (not unlinked or replaced)."""
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(lock.lockfile.fileno())
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


# The record lock ``fasteners`` takes on POSIX (``lockf`` on a descriptor opened for append),
# taken directly: every store transaction and every spec-read commit takes one, and
# ``fasteners`` re-creates the lock's directory tree and opens the file through ``io`` each
# time (about 0.2 ms of a 1.5 ms commit). The same lock, so both kinds of holder exclude each
# other (``try_lock`` still goes through ``fasteners``).
_LOCK_FILE_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
_MAX_POLL_SECONDS = 0.1  # fasteners' default ``max_delay``
_LOCK_FILE_MODE = 0o666  # what ``fasteners`` (``open(path, "a")``) creates: the umask applies


def _locked_descriptor(path: str, deadline: float, poll_interval: float, timeout: float) -> int:
    try:
        descriptor = os.open(path, _LOCK_FILE_FLAGS, _LOCK_FILE_MODE)
    except FileNotFoundError:
        _ensure_lock_dir(path)
        descriptor = os.open(path, _LOCK_FILE_FLAGS, _LOCK_FILE_MODE)
    delay = poll_interval
    try:
        while True:
            try:
                fcntl.lockf(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return descriptor
            except (BlockingIOError, PermissionError):  # EAGAIN or EACCES: another holder
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise LockTimeout(f"lock {path} not acquired within {timeout} s") from None
                time.sleep(min(delay, remaining))
                # Backing off as fasteners does: a long hold is not polled every 2 ms.
                delay = min(delay * 2, _MAX_POLL_SECONDS)
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
