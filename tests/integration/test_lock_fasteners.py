"""``FastenersLockFactory.try_lock`` on the real file system: what publication's staging locks
rely on (a dead holder frees its lock; a lock whose file lost its name is not a lock)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.store import lock as lock_fasteners
from adapters.store.lock import FastenersLockFactory
from application.ports import LockRefused, LockTimeout
from tests.contract._fs_worlds import deadline

HOLDER = """
import sys, time, fasteners
lock = fasteners.InterProcessLock(sys.argv[1])
assert lock.acquire(blocking=False)
print("held", flush=True)
time.sleep(120)
"""


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """Another process holding the lock at ``<tmp>/locks/held.lock``."""
    path = str(tmp_path / "locks" / "held.lock")
    os.makedirs(os.path.dirname(path))
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, path], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "held"
        yield process, path
    finally:
        process.kill()
        process.wait(timeout=30)


def test_a_free_lock_is_taken_and_its_file_created(tmp_path: Path) -> None:
    path = tmp_path / "locks" / "free.lock"
    with FastenersLockFactory().try_lock(str(path)) as taken:
        assert taken
        assert path.is_file()


def test_a_lock_held_by_another_process_is_not_taken(
    holder: tuple[subprocess.Popen[str], str],
) -> None:
    _, path = holder
    with FastenersLockFactory().try_lock(path) as taken:
        assert not taken


def test_a_lock_whose_holder_was_killed_is_free(
    holder: tuple[subprocess.Popen[str], str],
) -> None:
    process, path = holder
    process.kill()
    process.wait(timeout=30)
    with FastenersLockFactory().try_lock(path) as taken:
        assert taken


def _lose_the_name_after_locking(
    monkeypatch: pytest.MonkeyPatch, *, replace_with_new_file: bool
) -> None:
    """Make every acquisition be followed by a sweeper unlinking (and maybe recreating) the
    lock file: the builder locked a file that no longer carries the lock's name."""
    original = lock_fasteners._lock_now

    def lock_now(descriptor: int) -> bool:
        got = original(descriptor)
        path = os.readlink(f"/proc/self/fd/{descriptor}")
        os.unlink(path)
        if replace_with_new_file:
            Path(path).touch()
        return got

    monkeypatch.setattr(lock_fasteners, "_lock_now", lock_now)


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="names the locked file through /proc/self/fd"
)
@pytest.mark.parametrize("replace_with_new_file", [False, True])
def test_a_lock_whose_file_lost_its_name_while_being_taken_is_not_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replace_with_new_file: bool
) -> None:
    _lose_the_name_after_locking(monkeypatch, replace_with_new_file=replace_with_new_file)
    with FastenersLockFactory().try_lock(str(tmp_path / "lost.lock")) as taken:
        assert not taken


def test_discarding_a_missing_lock_file_is_fine(tmp_path: Path) -> None:
    FastenersLockFactory().discard(str(tmp_path / "never-created.lock"))


def test_a_discarded_lock_file_is_gone(tmp_path: Path) -> None:
    locks = FastenersLockFactory()
    path = tmp_path / "done.lock"
    with locks.try_lock(str(path)) as taken:
        assert taken
    locks.discard(str(path))
    assert not path.exists()


# ---- lock: the waiting lock every store transaction and spec-read commit takes ------------

PROBE = """
import sys, fasteners
lock = fasteners.InterProcessLock(sys.argv[1])
print("taken" if lock.acquire(blocking=False) else "refused", flush=True)
"""


def _another_process_takes(path: str) -> bool:
    answer = subprocess.run(
        [sys.executable, "-c", PROBE, path], capture_output=True, text=True, check=True
    )
    return answer.stdout.strip() == "taken"


def test_lock_waits_for_a_holder_in_another_process_then_times_out(
    holder: tuple[subprocess.Popen[str], str],
) -> None:
    _, path = holder
    with pytest.raises(LockTimeout), FastenersLockFactory().lock(path, timeout=0.2):
        pytest.fail("a lock held by another process was taken")


def test_lock_is_taken_once_its_holder_died(holder: tuple[subprocess.Popen[str], str]) -> None:
    process, path = holder
    process.kill()
    process.wait(timeout=30)
    with FastenersLockFactory().lock(path, timeout=5):
        assert not _another_process_takes(path)


def test_lock_held_here_excludes_other_processes_until_released(tmp_path: Path) -> None:
    path = str(tmp_path / "missing" / "dirs" / "task.lock")
    locks = FastenersLockFactory()
    with locks.lock(path):
        assert os.path.isfile(path), "the lock's directory and file are created"
        assert not _another_process_takes(path)
    assert _another_process_takes(path)
    with locks.lock(path):  # and taken again after the other process let it go
        assert not _another_process_takes(path)


# ---- a lock file where a child can write: never followed, never waited on ------------------

LockKind = str  # "fifo" | "symlink" | "dangling-symlink" | "directory"


def _plant(path: Path, kind: LockKind, outside: Path) -> None:
    """What a child with ``bash`` can leave at its task's lock path."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink":
        outside.write_bytes(b"the operator's own file\n")
        path.symlink_to(outside)
    elif kind == "dangling-symlink":
        path.symlink_to(outside)
    else:
        path.mkdir()


PLANTED = ["fifo", "symlink", "dangling-symlink", "directory"]


@pytest.mark.skipif(os.name == "nt", reason="FIFOs and O_NOFOLLOW are POSIX's")
@pytest.mark.parametrize("kind", PLANTED)
def test_lock_refuses_a_lock_path_that_is_no_regular_file_at_once(
    tmp_path: Path, kind: LockKind
) -> None:
    """A FIFO froze ``open(2)`` for ever; a symbolic link had the unconfined parent create (and
    lock) a file outside every grant. Both are refused without blocking or following."""
    path = tmp_path / "task" / ".spec-read.lock"
    path.parent.mkdir()
    outside = tmp_path / "outside" / "target"
    outside.parent.mkdir()
    _plant(path, kind, outside)
    before = outside.read_bytes() if outside.exists() else None
    locks = FastenersLockFactory()
    with deadline(5), pytest.raises(LockRefused) as refused, locks.lock(str(path), timeout=1):
        pytest.fail("a lock was taken on something that is not a regular file")
    assert "not a regular file" in str(refused.value)
    assert refused.value.filename == str(path)
    with deadline(5), pytest.raises(LockRefused), locks.try_lock(str(path)):
        pytest.fail("try_lock opened it")
    with deadline(5):
        assert locks.is_held(str(path)) is None, "nobody can hold a lock on it: cannot tell"
    assert (outside.read_bytes() if outside.exists() else None) == before, "nothing written"
    assert sorted(p.name for p in outside.parent.iterdir()) == (
        ["target"] if before is not None else []
    ), "nothing created beside it"


@pytest.mark.skipif(os.name == "nt", reason="FIFOs are POSIX's")
def test_a_fifo_with_a_reader_is_refused_after_opening(tmp_path: Path) -> None:
    """With a reader holding the FIFO open, the open succeeds at once: ``fstat`` refuses it."""
    path = tmp_path / "held.lock"
    os.mkfifo(path)
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with deadline(5), pytest.raises(LockRefused, match="FIFO"):
            lock_fasteners._open_lock_file(str(path))
    finally:
        os.close(reader)


@pytest.mark.skipif(os.name == "nt", reason="O_NOFOLLOW is POSIX's")
def test_a_link_swapped_in_after_the_lstat_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ``lstat`` found nothing; a link appears before the open: ``O_NOFOLLOW`` refuses it,
    and nothing is created at the link's target."""
    path = tmp_path / "task.lock"
    outside = tmp_path / "outside"
    real_lstat = os.lstat
    swapped: list[bool] = []

    def nothing_yet_then_a_link(target: str, *args: object, **kwargs: object) -> os.stat_result:
        if target == str(path) and not swapped:
            swapped.append(True)
            path.symlink_to(outside)
            raise FileNotFoundError(target)
        return real_lstat(target)

    monkeypatch.setattr(os, "lstat", nothing_yet_then_a_link)
    with pytest.raises(LockRefused, match="symbolic link"):
        lock_fasteners._open_lock_file(str(path))
    monkeypatch.undo()
    assert swapped
    assert not outside.exists()
