"""``FastenersLockFactory.try_lock`` on the real file system: what publication's staging locks
rely on (a dead holder frees its lock; a lock whose file lost its name is not a lock)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fasteners
import pytest

from adapters.lock_fasteners import FastenersLockFactory
from application.ports import LockTimeout

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
    original = fasteners.InterProcessLock.acquire

    def acquire(self: Any, *args: Any, **kwargs: Any) -> bool:
        got: bool = original(self, *args, **kwargs)
        os.unlink(self.path)
        if replace_with_new_file:
            Path(os.fsdecode(self.path)).touch()
        return got

    monkeypatch.setattr(fasteners.InterProcessLock, "acquire", acquire)


@pytest.mark.skipif(os.name == "nt", reason="Windows cannot unlink a file that is open")
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
