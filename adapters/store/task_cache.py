"""The file store's cache of decoded records: every pinned ``task.json`` is read on every
snapshot and transaction, every task's ``mailbox.json`` on every reconcile pass (mail for a
finished task reopens it), and every done task's ``observed.jsonl`` on every pass's audit;
reading and decoding them all again is what it saves."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

import attrs

from adapters.fs.change_clock import ChangeClock, Moment, settled_before
from application.ports import (
    FileIdentity,
    FileSystem,
    ReadFailure,
    StableRead,
    StableReadError,
)

_V = TypeVar("_V")

# How often a record replaced while it was read is read again before the read fails.
CHANGED_RETRIES = 3


@attrs.define
class _Cached(Generic[_V]):
    identity: FileIdentity
    data: bytes
    value: _V
    trusted: bool
    # When the bytes were read (a trusted entry is void once the wall clock stepped back).
    moment: Moment


class RecordCache(Generic[_V]):
    """Decoded records by path, so that a snapshot decodes only the records that changed.

    An entry holds the identity (device, inode, size, mtime, ctime) of the descriptor its bytes
    were read from, pinned and confirmed unchanged by the stable read. ``write_atomic`` replaces
    a record with a new file and ``append_bytes`` grows one, each stamping its ctime; so once
    the cached ctime is settled before the read (``adapters/fs/change_clock.py``: older than a
    reading of the file system's change clock taken just before, or else older than the read's
    wall time by more than any timestamp granularity), any later write has another ctime (even
    on an inode the file system reused) and one ``lstat`` showing the same identity proves the
    same bytes. A record read before it settled ("racy", as git calls it) is not trusted on its
    identity: it is read again each time and only its decoding is skipped when the bytes are the
    same.
    """

    def __init__(self, fs: FileSystem, clock: ChangeClock) -> None:
        self._fs = fs
        self._clock = clock
        self._entries: dict[str, _Cached[_V]] = {}

    def _read(self, path: str, max_bytes: int) -> tuple[StableRead | None, Moment]:
        """One stable read of ``path`` and when it started; ``None`` when the file is
        gone. A record replaced while it was read (``CHANGED``: another process's atomic
        rename unlinks the inode being read, which moves its ctime) is read again, up to
        ``CHANGED_RETRIES`` times: the replacement is whole, and a reader without the squad
        lock (``status``, ``watch``) must not call a concurrent commit tampering. A file that
        keeps changing still fails."""
        for attempt in range(CHANGED_RETRIES + 1):
            started = self._clock.moment()
            try:
                return self._fs.read_stable(path, max_bytes=max_bytes), started
            except StableReadError as error:
                self.forget(path)
                if not self._fs.exists(path):
                    return None, started
                if error.failure is not ReadFailure.CHANGED or attempt == CHANGED_RETRIES:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def load(self, path: str, max_bytes: int, decode: Callable[[bytes], _V]) -> _V | None:
        """The record at ``path`` decoded by ``decode``; ``None`` when nothing is there. A
        refused read (``StableReadError``) or a failed decode propagates and forgets the entry."""
        identity = self._fs.identity(path)
        if identity is None:
            # Nothing there (one ``lstat``; most tasks never get a mailbox): as a read that
            # found nothing would say, without the failed open.
            self.forget(path)
            return None
        entry = self._entries.get(path)
        if (
            entry is not None
            and entry.trusted
            and identity == entry.identity
            and not self._clock.stepped_since(entry.moment)
        ):
            return entry.value
        read, started = self._read(path, max_bytes)
        if read is None:
            return None
        known = self.same_bytes(read, started)
        if known is not None:
            return known
        try:
            value = decode(read.data)
        except BaseException:
            self.forget(path)
            raise
        self.remember(read, value, started)
        return value

    def same_bytes(self, read: StableRead, started: Moment) -> _V | None:
        """The cached record when ``read`` (begun at ``started``) has its bytes; its entry is
        renewed with the new identity, trusted if no longer racy."""
        entry = self._entries.get(read.path)
        if entry is None or entry.data != read.data:
            return None
        self.remember(read, entry.value, started)
        return entry.value

    def remember(self, read: StableRead, value: _V, started: Moment) -> None:
        """``value``, decoded from ``read``, which began at ``started``."""
        trusted = settled_before(read.identity, started.wall_ns, started.clock)
        self._entries[read.path] = _Cached(read.identity, read.data, value, trusted, started)

    def forget(self, path: str) -> None:
        self._entries.pop(path, None)
