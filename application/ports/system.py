"""The ports to the host's clock, randomness, temporary directories and inter-process locks."""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol

__all__ = ["Clock", "Ids", "LockFactory", "LockRefused", "LockTimeout", "TempDirs"]


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
