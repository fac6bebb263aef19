"""``FileWitnesses`` by file identity (device, inode, size, mtime, ctime), with the racy window of
``adapters/store_task_cache.py`` and a guard against a wall clock stepped back.

Why an unchanged identity proves unchanged bytes: every write (a replace, an append, a write in
place, a ``chmod``) sets the file's ctime to the wall time of that write, and a file's ctime
cannot be set by its writer. Once the witnessed ctime is older than the witness by more than the
file system's timestamp granularity (``settled_before``), any later write carries a later ctime,
so the identity differs, even on an inode the file system reused. A file changed within that
window is never trusted. A wall clock stepped back could give a later write an old ctime: a
witness is refused once the wall clock has run behind the monotonic clock since it was taken
(by more than the window plus a slew allowance).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from adapters.store_task_cache import settled_before
from application.ports import FileSystem, FileWitness

# NTP slews a clock by at most 500 ppm; a step is larger than the window plus this share.
_SLEW_PER_NS = 0.0005
_STEP_TOLERANCE_NS = 50_000_000


class IdentityWitnesses:
    def __init__(
        self,
        fs: FileSystem,
        wall_ns: Callable[[], int] = time.time_ns,
        monotonic_ns: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self._fs = fs
        self._wall_ns = wall_ns
        self._monotonic_ns = monotonic_ns

    def witness(self, paths: Sequence[str]) -> FileWitness:
        wall, monotonic = self._wall_ns(), self._monotonic_ns()
        identities = tuple(self._fs.identity(path) for path in paths)
        return FileWitness(tuple(paths), identities, wall, monotonic)

    def unchanged(self, witness: FileWitness) -> bool:
        if self._clock_stepped(witness):
            return False
        for path, identity in zip(witness.paths, witness.identities, strict=True):
            if identity is not None and not settled_before(identity.ctime_ns, witness.wall_ns):
                return False
            if self._fs.identity(path) != identity:
                return False
        return True

    def _clock_stepped(self, witness: FileWitness) -> bool:
        wall = self._wall_ns() - witness.wall_ns
        monotonic = self._monotonic_ns() - witness.monotonic_ns
        allowance = _STEP_TOLERANCE_NS + int(monotonic * _SLEW_PER_NS)
        return wall < 0 or wall < monotonic - allowance
