"""``FileWitnesses`` by file identity (device, inode, size, mtime, ctime), with the racy rule of
``adapters/fs/change_clock.py`` and a guard against a wall clock stepped back.

Why an unchanged identity proves unchanged bytes: every write (a replace, an append, a write in
place, a ``chmod``) stamps the file's ctime from the file system's clock, and a file's ctime
cannot be set by its writer. Once the witnessed ctime is settled before the witness (older than
a reading of the file system's change clock taken just before it, or else older than the
witness's wall time by more than any timestamp granularity: ``settled_before``), any later
write carries a later ctime, so the identity differs, even on an inode the file system reused.
A file changed before it settled is never trusted. A clock stepped back could give a later
write an old ctime: a witness is refused once the wall clock has run behind the monotonic clock
since it was taken (``ChangeClock.stepped_since``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from adapters.fs.change_clock import ChangeClock, settled_before
from application.ports import FileSystem, FileWitness


class IdentityWitnesses:
    def __init__(
        self,
        fs: FileSystem,
        wall_ns: Callable[[], int] = time.time_ns,
        monotonic_ns: Callable[[], int] = time.monotonic_ns,
        *,
        root: str | None = None,
    ) -> None:
        """``root``: the store root, whose file system's change clock is read (none: the wall
        clock's rule alone). Every witness then touches ``<root>/.fs-clock``, so only a holder
        of the squad lock may witness: the scheduler does, inside its repair transaction
        (``application/squads/scheduler/audit_memo.py``); read-only views never witness."""
        self._fs = fs
        self._clock = ChangeClock(fs, root, wall_ns, monotonic_ns)

    def witness(self, paths: Sequence[str]) -> FileWitness:
        moment = self._clock.moment()
        try:
            identities = tuple(self._fs.identity(path) for path in paths)
        except OSError:
            # Not even an ``lstat`` (a child ``chmod``-ed a directory on the way): the result
            # is computed without a witness that could vouch for it, so it is never reused.
            identities, unknown = tuple(None for _ in paths), True
        else:
            unknown = False
        settled = not unknown and all(
            identity is None or settled_before(identity, moment.wall_ns, moment.clock)
            for identity in identities
        )
        return FileWitness(
            tuple(paths),
            identities,
            moment.wall_ns,
            moment.monotonic_ns,
            moment.clock,
            settled=settled,
        )

    def unchanged(self, witness: FileWitness) -> bool:
        # ``settled`` depends only on what the witness holds: decided once, when it was taken.
        if not witness.settled or self._clock.stepped_back(
            witness.wall_ns, witness.monotonic_ns, with_reading=witness.clock is not None
        ):
            return False
        identity = self._fs.identity
        try:
            for path, witnessed in zip(witness.paths, witness.identities, strict=True):
                if identity(path) != witnessed:
                    return False
        except OSError:
            return False
        return True
