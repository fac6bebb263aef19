"""The file store's cache of decoded task records (``FileStore`` reads every pinned
``task.json`` on every snapshot and transaction: decoding them all is what it saves)."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from application.ports import FileIdentity, FileSystem, StableRead
from domain.squad.model import Task

# How recent a record's ctime may be for its identity alone to be trusted (see ``TaskCache``):
# more than the timestamp granularity of any local file system with sub-second times (a
# kernel timer tick, 1-16 ms); a file system that keeps whole seconds gets two seconds.
_RACY_NS = 100_000_000
_RACY_WHOLE_SECONDS_NS = 2_000_000_000


@attrs.define
class _CachedTask:
    identity: FileIdentity
    data: bytes
    task: Task
    trusted: bool


class TaskCache:
    """Decoded task records by path, so that a snapshot decodes only the records that changed.

    An entry holds the identity (device, inode, size, mtime, ctime) of the descriptor its bytes
    were read from, pinned and confirmed unchanged by the stable read. ``write_atomic`` replaces
    a record with a new file, whose ctime is the time of that write; so once the cached ctime is
    older than the read by more than the file system's timestamp granularity, any later write
    has another ctime (even on an inode the file system reused) and one ``lstat`` showing the
    same identity proves the same bytes. A record read within that window ("racy", as git calls
    it) is not trusted on its identity: it is read again each time and only its decoding is
    skipped when the bytes are the same. Assumes file times from this machine's clock (a clock
    stepped back, or a network file system's skewed clock, would need a wider window).
    """

    def __init__(self, fs: FileSystem, wall_ns: Callable[[], int]) -> None:
        self._fs = fs
        self._wall_ns = wall_ns
        self._entries: dict[str, _CachedTask] = {}

    def trusted(self, path: str) -> Task | None:
        entry = self._entries.get(path)
        if entry is None or not entry.trusted or self._fs.identity(path) != entry.identity:
            return None
        return entry.task

    def now(self) -> int:
        """The wall clock, taken before a read whose result is then remembered."""
        return self._wall_ns()

    def same_bytes(self, read: StableRead, started: int) -> Task | None:
        """The cached record when ``read`` (begun at ``started``) has its bytes; its entry is
        renewed with the new identity, trusted if no longer racy."""
        entry = self._entries.get(read.path)
        if entry is None or entry.data != read.data:
            return None
        self.remember(read, entry.task, started)
        return entry.task

    def remember(self, read: StableRead, task: Task, started: int) -> None:
        """``task``, decoded from ``read``, which began at wall time ``started``."""
        trusted = _settled(read.identity.ctime_ns, started)
        self._entries[read.path] = _CachedTask(read.identity, read.data, task, trusted)

    def forget(self, path: str) -> None:
        self._entries.pop(path, None)


def _settled(ctime_ns: int, started: int) -> bool:
    """The record was last changed long enough before the read began that any later change
    has another ctime."""
    window = _RACY_WHOLE_SECONDS_NS if ctime_ns % 1_000_000_000 == 0 else _RACY_NS
    return ctime_ns < started - window
