"""An in-process lock factory that records every acquisition (and can be made to time out, or to
refuse a lock path as the real one refuses a FIFO or a link there)."""

from __future__ import annotations

import errno
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import attrs

from application.ports import LockFactory, LockRefused, LockTimeout, held_lock, tried_lock


@attrs.define
class FakeLockFactory:
    acquired: list[str] = attrs.field(factory=list)
    discarded: list[str] = attrs.field(factory=list)
    held_elsewhere: set[str] = attrs.field(factory=set)
    queried: list[str] = attrs.field(factory=list)
    # Paths at which something other than a regular file lies (every attempt is refused).
    refused: set[str] = attrs.field(factory=set)
    _locks: dict[str, threading.Lock] = attrs.field(factory=dict)
    _guard: threading.Lock = attrs.field(factory=threading.Lock)

    def _lock_for(self, path: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(path, threading.Lock())

    @contextmanager
    def lock(self, path: str, *, timeout: float = 10.0) -> Iterator[None]:
        if path in self.refused:
            raise LockRefused(errno.EINVAL, "the lock file is a FIFO, not a regular file", path)
        if path in self.held_elsewhere:
            raise LockTimeout(f"lock {path} held by another process")
        lock = self._lock_for(path)
        with held_lock(lock.acquire(timeout=timeout), lock.release, path, timeout):
            self.acquired.append(path)
            yield

    @contextmanager
    def try_lock(self, path: str) -> Iterator[bool]:
        if path in self.held_elsewhere:
            yield False
            return
        lock = self._lock_for(path)
        taken = lock.acquire(blocking=False)
        if taken:
            self.acquired.append(path)
        with tried_lock(taken, lock.release):
            yield taken

    def discard(self, path: str) -> None:
        self.discarded.append(path)

    def is_held(self, path: str) -> bool | None:
        self.queried.append(path)
        return path in self.held_elsewhere or self._lock_for(path).locked()


_conforms: type[LockFactory] = FakeLockFactory
