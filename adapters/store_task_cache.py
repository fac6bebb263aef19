"""The file store's cache of decoded records: every pinned ``task.json`` is read on every
snapshot and transaction, every task's ``mailbox.json`` on every reconcile pass (mail for a
finished task reopens it), and every done task's ``observed.jsonl`` on every pass's audit;
reading and decoding them all again is what it saves."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

import attrs

from application.ports import (
    FileIdentity,
    FileSystem,
    ReadFailure,
    StableRead,
    StableReadError,
)

_V = TypeVar("_V")

# How recent a record's ctime may be for its identity alone to be trusted (see ``RecordCache``):
# more than the timestamp granularity of any local file system with sub-second times (a
# kernel timer tick, 1-16 ms); a file system that keeps whole seconds gets two seconds.
_RACY_NS = 100_000_000
_RACY_WHOLE_SECONDS_NS = 2_000_000_000


# How often a record replaced while it was read is read again before the read fails.
CHANGED_RETRIES = 3


@attrs.define
class _Cached(Generic[_V]):
    identity: FileIdentity
    data: bytes
    value: _V
    trusted: bool


class RecordCache(Generic[_V]):
    """Decoded records by path, so that a snapshot decodes only the records that changed.

    An entry holds the identity (device, inode, size, mtime, ctime) of the descriptor its bytes
    were read from, pinned and confirmed unchanged by the stable read. ``write_atomic`` replaces
    a record with a new file and ``append_bytes`` grows one, each setting its ctime to the time
    of the write; so once the cached ctime is older than the read by more than the file system's
    timestamp granularity, any later write has another ctime (even on an inode the file system
    reused) and one ``lstat`` showing the same identity proves the same bytes. A record read
    within that window ("racy", as git calls it) is not trusted on its identity: it is read
    again each time and only its decoding is skipped when the bytes are the same. Assumes file
    times from this machine's clock (a clock stepped back, or a network file system's skewed
    clock, would need a wider window).
    """

    def __init__(self, fs: FileSystem, wall_ns: Callable[[], int]) -> None:
        self._fs = fs
        self._wall_ns = wall_ns
        self._entries: dict[str, _Cached[_V]] = {}

    def _read(self, path: str, max_bytes: int) -> tuple[StableRead | None, int]:
        """One stable read of ``path`` and the wall time it started; ``None`` when the file is
        gone. A record replaced while it was read (``CHANGED``: another process's atomic
        rename unlinks the inode being read, which moves its ctime) is read again, up to
        ``CHANGED_RETRIES`` times: the replacement is whole, and a reader without the squad
        lock (``status``, ``watch``) must not call a concurrent commit tampering. A file that
        keeps changing still fails."""
        for attempt in range(CHANGED_RETRIES + 1):
            started = self._wall_ns()
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
        if entry is not None and entry.trusted and identity == entry.identity:
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

    def same_bytes(self, read: StableRead, started: int) -> _V | None:
        """The cached record when ``read`` (begun at ``started``) has its bytes; its entry is
        renewed with the new identity, trusted if no longer racy."""
        entry = self._entries.get(read.path)
        if entry is None or entry.data != read.data:
            return None
        self.remember(read, entry.value, started)
        return entry.value

    def remember(self, read: StableRead, value: _V, started: int) -> None:
        """``value``, decoded from ``read``, which began at wall time ``started``."""
        trusted = settled_before(read.identity.ctime_ns, started)
        self._entries[read.path] = _Cached(read.identity, read.data, value, trusted)

    def forget(self, path: str) -> None:
        self._entries.pop(path, None)


def settled_before(ctime_ns: int, started: int) -> bool:
    """The record was last changed long enough before the read began that any later change
    has another ctime."""
    window = _RACY_WHOLE_SECONDS_NS if ctime_ns % 1_000_000_000 == 0 else _RACY_NS
    return ctime_ns < started - window
