"""``FileSystem.clock_reading`` against every file-system world: a reading of the file system's
own change clock, taken by touching a clock file, that the racy rule of
``adapters/fs/change_clock.py`` compares ctimes with. The rule rests on one property of the real
file system, checked here on this machine's: a change made after a reading is stamped at least
as late as the reading."""

from __future__ import annotations

import os
import stat

import pytest

from tests.contract._fs_worlds import POSIX_KINDS, REAL_KIND, WINDOWS_KINDS, World, in_worlds


@in_worlds(*POSIX_KINDS)
def test_a_first_reading_creates_an_empty_private_clock_file_and_returns_its_identity(
    world: World,
) -> None:
    path = world.path(".fs-clock")
    reading = world.adapter().clock_reading(path)
    assert reading is not None
    status = os.lstat(path)
    assert stat.S_ISREG(status.st_mode)
    assert status.st_size == 0
    assert world.mode(path) == 0o600
    assert (reading.device, reading.inode, reading.ctime_ns) == (
        status.st_dev,
        status.st_ino,
        status.st_ctime_ns,
    )


@in_worlds(*POSIX_KINDS)
def test_a_later_reading_touches_the_same_file_and_never_reads_earlier(world: World) -> None:
    path = world.path(".fs-clock")
    adapter = world.adapter()
    first = adapter.clock_reading(path)
    world.make_old(path)  # a reading must stamp the file now, not just look at it
    second = adapter.clock_reading(path)
    assert first is not None
    assert second is not None
    assert second.inode == first.inode
    assert second.ctime_ns >= first.ctime_ns
    assert second.mtime_ns >= first.ctime_ns, "the times were set to now"


@in_worlds(REAL_KIND)
def test_every_change_after_a_reading_is_stamped_at_least_as_late(world: World) -> None:
    """The file system's clock never runs backwards across files: what makes a ctime older
    than a reading proof that a later change is seen (git's racy rule)."""
    if world.flavour == "windows":
        pytest.skip("Windows takes no readings")
    adapter = world.adapter()
    clock = world.path(".fs-clock")
    record = world.path("task.json")
    log = world.path("observed.jsonl")
    for round_ in range(300):
        reading = adapter.clock_reading(clock)
        assert reading is not None
        if round_ % 2:
            adapter.write_atomic(record, b"{}\n")
            changed = os.lstat(record)
        else:
            adapter.append_bytes(log, b"{}\n")
            changed = os.lstat(log)
        assert changed.st_ctime_ns >= reading.ctime_ns, round_


@in_worlds(*POSIX_KINDS)
def test_no_reading_through_a_symlink_nor_of_a_directory_nor_without_a_directory(
    world: World,
) -> None:
    adapter = world.adapter()
    target = world.write("target", b"kept")
    world.make_old(target)
    before = os.lstat(target)
    link = world.symlink(target, "link")
    assert adapter.clock_reading(link) is None
    after = os.lstat(target)
    assert (after.st_mtime_ns, after.st_ctime_ns) == (before.st_mtime_ns, before.st_ctime_ns)
    assert adapter.clock_reading(world.mkdir("directory")) is None
    missing = world.path("missing/.fs-clock")
    assert adapter.clock_reading(missing) is None
    assert not os.path.lexists(world.path("missing"))


@in_worlds(*WINDOWS_KINDS)
def test_windows_takes_no_reading_and_creates_nothing(world: World) -> None:
    """Its ``st_ctime`` is the creation time: no file's ctime reads the change clock."""
    path = world.path(".fs-clock")
    assert world.adapter().clock_reading(path) is None
    assert not os.path.lexists(path)


def test_a_reading_refuses_a_relative_path(world: World) -> None:
    with pytest.raises(ValueError, match="absolute"):
        world.adapter().clock_reading(".fs-clock")
