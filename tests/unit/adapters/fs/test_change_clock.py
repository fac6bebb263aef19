"""The racy rule (``adapters/fs/change_clock.py``): when an unchanged identity proves unchanged
bytes, by the file system's own change clock where a reading was taken, else by the wall
clock; and when a wall clock stepped back voids what was remembered."""

from __future__ import annotations

import errno
import threading

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.fs.change_clock import (
    RACY_NS,
    RACY_WHOLE_SECONDS_NS,
    STEP_TOLERANCE_NS,
    WALL_STEP_TOLERANCE_NS,
    ChangeClock,
    Holders,
    settled_before,
)
from application.ports import FileIdentity
from tests.fakes.filesystem import InMemoryFileSystem

MS = 1_000_000
SECOND = 1_000 * MS
NOW = 1_800_000_000 * SECOND + 123 * MS  # a wall time with a sub-second part


def identity(ctime_ns: int, device: int = 1) -> FileIdentity:
    return FileIdentity(device=device, inode=7, size=10, mtime_ns=ctime_ns, ctime_ns=ctime_ns)


# ---- settled_before ----------------------------------------------------------------------------


def test_a_ctime_older_than_the_reading_settles_at_once_though_the_wall_clock_calls_it_racy() -> (
    None
):
    changed = NOW - 5 * MS
    assert not settled_before(identity(changed), NOW, None), "racy by the wall clock"
    assert settled_before(identity(changed), NOW, identity(NOW))


def test_a_ctime_within_the_step_tolerance_of_the_reading_is_racy() -> None:
    reading = identity(NOW)
    assert not settled_before(identity(NOW), NOW, reading), "the same tick"
    assert not settled_before(identity(NOW - STEP_TOLERANCE_NS), NOW, reading)
    assert settled_before(identity(NOW - STEP_TOLERANCE_NS - 1), NOW, reading)


def test_a_reading_of_another_device_s_clock_decides_nothing() -> None:
    changed = identity(NOW - 5 * MS, device=2)
    assert not settled_before(changed, NOW, identity(NOW, device=1))
    assert settled_before(identity(NOW - RACY_NS - 1, device=2), NOW, identity(NOW, device=1))


def test_without_a_reading_the_wall_clock_s_window_decides() -> None:
    assert not settled_before(identity(NOW - RACY_NS), NOW, None)
    assert settled_before(identity(NOW - RACY_NS - 1), NOW, None)


def test_by_the_wall_clock_a_recent_mtime_is_racy_though_the_ctime_is_old() -> None:
    # Windows: ``st_ctime`` is the creation time, and only the mtime moves with a write.
    created = NOW - 10 * SECOND
    written = attrs.evolve(identity(created), mtime_ns=NOW - 5 * MS)
    assert not settled_before(written, NOW, None)
    assert settled_before(attrs.evolve(identity(created), mtime_ns=NOW - RACY_NS - 1), NOW, None)
    # A whole-second mtime (a coarse file system) waits out two seconds, as a ctime does.
    whole = (NOW // SECOND - 1) * SECOND
    assert not settled_before(attrs.evolve(identity(created), mtime_ns=whole), NOW, None)


def test_a_whole_second_ctime_needs_two_seconds_by_the_wall_clock_but_not_by_the_reading() -> None:
    whole = (NOW // SECOND - 1) * SECOND
    assert NOW - whole < RACY_WHOLE_SECONDS_NS
    assert not settled_before(identity(whole), NOW, None)
    assert settled_before(identity(whole), NOW, identity(whole + SECOND))
    assert not settled_before(identity(whole), NOW, identity(whole)), "the same second"


@given(
    ctime=st.integers(min_value=0, max_value=2**62),
    mtime=st.integers(min_value=0, max_value=2**62),
    reading=st.integers(min_value=0, max_value=2**62),
    wall=st.integers(min_value=0, max_value=2**62),
)
def test_settled_means_older_than_the_reading_by_the_margin_or_than_the_wall_window(
    ctime: int, mtime: int, reading: int, wall: int
) -> None:
    # The reading compares ctimes, both stamped by the file system's clock; the wall clock's
    # window is measured from the later of the ctime and the mtime.
    changed = max(ctime, mtime)
    window = RACY_WHOLE_SECONDS_NS if changed % SECOND == 0 else RACY_NS
    expected = ctime < reading - STEP_TOLERANCE_NS or changed < wall - window
    file = attrs.evolve(identity(ctime), mtime_ns=mtime)
    assert settled_before(file, wall, identity(reading)) is expected


# ---- stepped_since -----------------------------------------------------------------------------


@attrs.define
class Clocks:
    wall: int = NOW
    monotonic: int = 5 * SECOND

    def advance(self, nanoseconds: int) -> None:
        self.wall += nanoseconds
        self.monotonic += nanoseconds


def clock_over(fs: InMemoryFileSystem, clocks: Clocks, root: str | None = "/root") -> ChangeClock:
    return ChangeClock(fs, root, lambda: clocks.wall, lambda: clocks.monotonic)


def read_world(clocks: Clocks) -> tuple[InMemoryFileSystem, ChangeClock]:
    fs = InMemoryFileSystem()
    fs.add_dir("/root")
    fs.change_clock = True
    return fs, clock_over(fs, clocks)


@pytest.mark.parametrize(
    ("clock_root", "elapsed", "slew", "tolerance"),
    [
        # With a change-clock reading: 2 ms, however long ago the reading was.
        pytest.param("/root", 600 * SECOND, 0, STEP_TOLERANCE_NS, id="after-a-reading"),
        # Without one: 50 ms on top of a slew of 500 ppm of the time since (5 ms of 10 s).
        pytest.param(None, 10 * SECOND, 5 * MS, WALL_STEP_TOLERANCE_NS, id="without-a-reading"),
    ],
)
def test_a_step_back_is_seen_only_beyond_the_rules_margin_and_the_slew_allowed(
    clock_root: str | None, elapsed: int, slew: int, tolerance: int
) -> None:
    clocks = Clocks()
    fs, _ = read_world(clocks)
    clock = clock_over(fs, clocks, root=clock_root)
    moment = clock.moment()
    assert (moment.clock is not None) is (clock_root is not None)
    clocks.advance(elapsed)
    clocks.wall -= slew
    assert not clock.stepped_since(moment)
    clocks.wall -= tolerance
    assert not clock.stepped_since(moment), "within the rule's margin and the slew"
    clocks.wall -= 1
    assert clock.stepped_since(moment)


def test_a_wall_clock_before_the_moment_is_a_step() -> None:
    for clock_root in ("/root", None):
        clocks = Clocks()
        fs, _ = read_world(clocks)
        clock = clock_over(fs, clocks, root=clock_root)
        moment = clock.moment()
        clocks.wall -= 1
        assert clock.stepped_since(moment)


def test_a_wall_clock_stepped_forward_is_no_step() -> None:
    clocks = Clocks()
    _fs, clock = read_world(clocks)
    moment = clock.moment()
    clocks.advance(SECOND)
    clocks.wall += 3600 * SECOND
    assert not clock.stepped_since(moment)


# ---- moment ------------------------------------------------------------------------------------


def test_a_moment_reads_the_change_clock_under_the_root_before_the_wall_clock() -> None:
    fs = InMemoryFileSystem()
    fs.add_dir("/root")
    fs.change_clock = True
    moment = clock_over(fs, Clocks()).moment()
    assert moment.clock == fs.identity("/root/.fs-clock")
    assert [call.path for call in fs.calls_of("clock_reading")] == ["/root/.fs-clock"]


def test_no_reading_without_a_root_or_while_touching_is_not_allowed() -> None:
    fs = InMemoryFileSystem()
    fs.add_dir("/root")
    fs.change_clock = True
    clocks = Clocks()
    assert clock_over(fs, clocks, root=None).moment().clock is None
    allowed = False
    forbidden = ChangeClock(
        fs, "/root", lambda: clocks.wall, lambda: clocks.monotonic, may_touch=lambda: allowed
    )
    assert forbidden.moment().clock is None
    assert fs.calls_of("clock_reading") == [], "a read-only command moves nothing"
    allowed = True
    assert forbidden.moment().clock is not None


def test_a_failed_reading_falls_back_to_the_wall_clock() -> None:
    fs = InMemoryFileSystem()
    fs.add_dir("/root")
    fs.change_clock = True
    fs.fail("clock_reading", error=OSError(errno.EROFS, "read-only file system"))
    clocks = Clocks()
    moment = clock_over(fs, clocks).moment()
    assert moment.clock is None
    assert (moment.wall_ns, moment.monotonic_ns) == (clocks.wall, clocks.monotonic)


def test_a_root_that_is_no_path_gives_no_readings() -> None:
    fs = InMemoryFileSystem()
    fs.change_clock = True
    assert clock_over(fs, Clocks(), root="relative/root").moment().clock is None
    assert fs.calls_of("clock_reading") == []


# ---- Holders -----------------------------------------------------------------------------------


def test_holders_count_nested_and_concurrent_holds() -> None:
    holders = Holders()
    assert not holders.any()
    with holders.held():
        with holders.held():
            assert holders.any()
        assert holders.any()
    assert not holders.any()
    started, release = threading.Barrier(9), threading.Event()

    def hold() -> None:
        with holders.held():
            started.wait()
            release.wait()

    threads = [threading.Thread(target=hold) for _ in range(8)]
    for thread in threads:
        thread.start()
    started.wait()
    assert holders.any()
    release.set()
    for thread in threads:
        thread.join()
    assert not holders.any()


def test_a_hold_ends_when_its_block_raises() -> None:
    holders = Holders()
    with pytest.raises(RuntimeError), holders.held():
        raise RuntimeError("the transaction failed")
    assert not holders.any()
