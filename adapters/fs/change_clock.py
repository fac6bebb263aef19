"""When an unchanged file identity proves unchanged bytes: the racy rule shared by the store's
record cache (``adapters/store/task_cache.py``) and the audit witnesses
(``adapters/fs/witness.py``).

Every change to a file (a replace, an append, a write in place, a ``chmod``) stamps its ctime
from the file system's clock, and no writer can set a ctime. So a file whose identity (device,
inode, size, mtime, ctime) was taken before a read, and whose ctime is older than the clock at
that moment by more than the clock's granularity, gets another identity from any later change;
a file changed within that granularity ("racy", as git calls it) is never trusted on its
identity. Two ways to know that the clock has moved on (``settled_before``):

* **the file system's own clock** (git's rule): just before the read, touch a clock file under
  the store root (``FileSystem.clock_reading``). A file on the same device whose ctime is older
  than the clock file's (by more than ``STEP_TOLERANCE_NS``) was changed in an earlier tick,
  and any change after the reading is stamped at least as late as the reading. No timestamp
  granularity is assumed, and a file system whose clock is not this machine's wall clock is
  read correctly;
* **the wall clock** (where no reading can be taken: Windows, a read-only root, a record on
  another device): the last change, the later of the ctime and the mtime (on Windows
  ``st_ctime`` is the creation time), must be older than the read's start by more than the
  coarsest timestamp granularity of a local file system with sub-second times (a kernel timer
  tick, 1-16 ms; 100 ms allowed), or two seconds where the file system keeps whole seconds.
  Assumes file times from this machine's clock.

A clock stepped back could give a later change an old ctime. Both users refuse what they
remembered once the wall clock has run behind the monotonic clock since (``stepped_since``) by
more than the margin of the rule that may have trusted it: 2 ms where a change-clock reading
was taken, else 50 ms plus NTP's slew over the time elapsed (inside the 100 ms window).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

import attrs

from application.ports import FileIdentity, FileSystem
from domain import paths

RACY_NS = 100_000_000
RACY_WHOLE_SECONDS_NS = 2_000_000_000
# A step of the wall clock back by at most this much goes unseen where a change-clock reading
# was taken (the rule keeps this margin below the reading). On Linux, NTP's slewing moves the
# monotonic clock with the wall clock, so nothing else parts them; where it does not, a slewing
# clock is taken for a step, which costs a read, never a wrong trust.
STEP_TOLERANCE_NS = 2_000_000
# Without a reading, the wall-clock rule's 100 ms window leaves room for a wider tolerance,
# plus NTP's 500 ppm of slew over the time elapsed.
WALL_STEP_TOLERANCE_NS = 50_000_000
_SLEW_PER_NS = 0.0005

# The clock file under the store root: empty, only its times change. The leading dot keeps it
# out of the squad listing (no squad id starts with one).
CHANGE_CLOCK_FILE = ".fs-clock"


@attrs.frozen
class Moment:
    """When something was read: the wall and monotonic clocks, and the change-clock reading
    taken just before (``None`` where none could be taken)."""

    wall_ns: int
    monotonic_ns: int
    clock: FileIdentity | None


class ChangeClock:
    """The clocks a racy decision needs, including the change clock of the file system that
    holds ``root`` (``None``: the wall clock's rule alone)."""

    def __init__(
        self,
        fs: FileSystem,
        root: str | None,
        wall_ns: Callable[[], int] = time.time_ns,
        monotonic_ns: Callable[[], int] = time.monotonic_ns,
        *,
        may_touch: Callable[[], bool] = lambda: True,
    ) -> None:
        """``may_touch``: whether a reading may be taken now (it touches the clock file: a
        read-only command, which moves nothing, reads by the wall clock alone)."""
        self._fs = fs
        self._wall_ns = wall_ns
        self._monotonic_ns = monotonic_ns
        self._may_touch = may_touch
        self._path: str | None = None
        if root is not None:
            # A root that is no usable path gives no readings (the store refuses it itself).
            with contextlib.suppress(ValueError):
                self._path = paths.join_path(root, CHANGE_CLOCK_FILE, flavour=fs.flavour)

    def moment(self) -> Moment:
        """Now; take it before the reads it is to vouch for."""
        path = self._path
        clock = None
        if path is not None and self._may_touch():
            # No reading is no failure: the wall clock's rule decides instead.
            with contextlib.suppress(OSError):
                clock = self._fs.clock_reading(path)
        return Moment(self._wall_ns(), self._monotonic_ns(), clock)

    def stepped_since(self, moment: Moment) -> bool:
        """The wall clock ran behind the monotonic clock since ``moment`` (or stands before
        it): stepped back, so a change since may carry an old ctime."""
        return self.stepped_back(
            moment.wall_ns, moment.monotonic_ns, with_reading=moment.clock is not None
        )

    def stepped_back(self, wall_ns: int, monotonic_ns: int, *, with_reading: bool) -> bool:
        """``stepped_since`` a moment given by its clocks (``with_reading``: a change-clock
        reading was taken then, so the tighter margin applies)."""
        wall = self._wall_ns() - wall_ns
        monotonic = self._monotonic_ns() - monotonic_ns
        if with_reading:
            allowance = STEP_TOLERANCE_NS
        else:
            allowance = WALL_STEP_TOLERANCE_NS + int(monotonic * _SLEW_PER_NS)
        return wall < 0 or wall < monotonic - allowance


class Holders:
    """How many holders of something (a store's transactions) there are now; thread-safe."""

    def __init__(self) -> None:
        self._count = 0
        self._guard = threading.Lock()

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        with self._guard:
            self._count += 1
        try:
            yield
        finally:
            with self._guard:
                self._count -= 1

    def any(self) -> bool:
        return self._count > 0


def settled_before(identity: FileIdentity, wall_ns: int, clock: FileIdentity | None) -> bool:
    """The file was last changed long enough before a read that began at wall time
    ``wall_ns``, just after the change-clock reading ``clock``, that any later change gives it
    another identity (while the wall clock does not step back: ``ChangeClock.stepped_since``).

    The wall clock's rule takes the later of the ctime and the mtime as the last change: on
    POSIX the ctime is never the earlier one (a writer may set an mtime, only into the future
    does that make it later, and then the file is simply read again), while on Windows
    ``st_ctime`` is the creation time and only the mtime moves with a write."""
    ctime = identity.ctime_ns
    if (
        clock is not None
        and clock.device == identity.device
        and ctime < clock.ctime_ns - STEP_TOLERANCE_NS
    ):
        return True
    changed = max(ctime, identity.mtime_ns)
    window = RACY_WHOLE_SECONDS_NS if changed % 1_000_000_000 == 0 else RACY_NS
    return changed < wall_ns - window
