"""The ports to the host's clock, randomness, temporary directories and inter-process locks."""

from __future__ import annotations

from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = [
    "Clock",
    "Ids",
    "LockFactory",
    "LockRefused",
    "LockTimeout",
    "TempDirs",
    "held_lock",
    "lock_timeout",
    "tried_lock",
]


class Clock(Protocol):
    def now(self) -> datetime:
        """Aware UTC time. Use cases read it once per operation."""
        ...

    def monotonic(self) -> float: ...


class Ids(Protocol):
    """Randomness: fresh identifiers, and suffixes that keep a new name unique (their first
    eight characters are random too)."""

    def uuid4_hex(self) -> str: ...


class TempDirs(Protocol):
    def temporary_dir(self, prefix: str) -> AbstractContextManager[str]:
        """A new private directory whose name starts with ``prefix``; the context yields its
        absolute path and removes it, with everything in it, when it ends."""
        ...


class LockTimeout(Exception):
    """A lock was not acquired within its bound."""


def lock_timeout(path: str, timeout: float) -> LockTimeout:
    return LockTimeout(f"lock {path} not acquired within {timeout} s")


@contextmanager
def held_lock(
    taken: bool, release: Callable[[], object], path: str, timeout: float
) -> Iterator[None]:
    """What ``LockFactory.lock`` does once it has tried for ``timeout`` seconds to take the lock
    named by ``path``: not ``taken``, ``LockTimeout``; else the ``with`` block holds it, and
    ``release`` lets it go however the block ends. Every lock factory (the fake too) ends a
    ``lock`` through here."""
    if not taken:
        raise lock_timeout(path, timeout)
    try:
        yield
    finally:
        release()


@contextmanager
def tried_lock(taken: bool, release: Callable[[], object]) -> Iterator[bool]:
    """What ``LockFactory.try_lock`` yields once it has tried to take the lock: whether it was
    ``taken``; a lock taken is let go (``release``) however the block ends."""
    try:
        yield taken
    finally:
        if taken:
            release()


class LockRefused(OSError):
    """The lock's path names something that is not a regular file (a FIFO, a symbolic link, a
    directory, a device, a socket): it was not taken, and nothing was opened that could block
    or follow a link. An ``OSError``, so a command that meets it reports the refusal as a
    failed file operation (``IO_FAILED``) instead of hanging or writing elsewhere."""


class LockFactory(Protocol):
    def lock(self, path: str, *, timeout: float = 10.0) -> AbstractContextManager[None]:
        """A cross-process exclusive lock named by ``path`` (the lock file); waits up to
        ``timeout`` seconds, then raises ``LockTimeout``. The lock file is created if missing
        and must be a regular file: anything else at ``path``, a symbolic link included, is
        ``LockRefused`` at once (never followed, never waited on)."""
        ...

    def try_lock(self, path: str) -> AbstractContextManager[bool]:
        """Take the lock only if it is free now; the context yields whether it was taken.

        A lock held by a process that died is free: the operating system released it. The
        lock file is held to the same rule as ``lock``'s (``LockRefused``).
        """
        ...

    def discard(self, path: str) -> None:
        """Remove a lock file nobody needs any more (missing is fine)."""
        ...

    def is_held(self, path: str) -> bool | None:
        """Whether some process holds the lock now, asked without taking it (a reader must not
        make a driver's ``try_lock`` fail); ``None`` where the platform cannot tell that way."""
        ...
