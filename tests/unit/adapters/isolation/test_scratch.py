"""Confined children's private temporary directories: named after their owner, swept once the
owner is gone (``adapters/isolation/scratch.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adapters.isolation import scratch as child_scratch
from adapters.isolation.scratch import (
    LEGACY_STALE_SECONDS,
    make_scratch,
    owner_alive,
    process_start,
    sweep_stale_scratch,
)
from domain.child_environment import WORKER_DIR_PREFIX


def dead_pid() -> int:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    return gone.pid


def scratch(parent: Path, name: str) -> Path:
    path = parent / name
    (path / "agent").mkdir(parents=True)
    (path / "agent" / "auth.json").write_text("{}")
    return path


def test_a_scratch_is_named_after_this_process_and_its_start(tmp_path: Path) -> None:
    made = Path(make_scratch(str(tmp_path)))
    assert made.parent == tmp_path
    start = process_start(os.getpid())
    assert made.name.startswith(f"pi-squad-child-{os.getpid()}.{start or 0}-")
    assert made.stat().st_mode & 0o777 == 0o700
    assert sweep_stale_scratch(str(tmp_path)) == [], "its owner is alive"
    assert made.exists()


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="start times come from /proc")
def test_the_owner_is_alive_only_with_its_own_start_time() -> None:
    start = process_start(os.getpid())
    assert start is not None
    assert owner_alive(os.getpid(), start)
    assert owner_alive(os.getpid(), 0), "an unknown start time trusts the pid"
    assert not owner_alive(os.getpid(), start + 1), "a reused pid is not the owner"
    assert not owner_alive(dead_pid(), 0)


def test_only_stale_scratch_directories_are_swept(tmp_path: Path) -> None:
    live = scratch(tmp_path, f"pi-squad-child-{os.getpid()}.{process_start(os.getpid()) or 0}-a1")
    stale = scratch(tmp_path, f"pi-squad-child-{dead_pid()}.1-b2")
    old = scratch(tmp_path, "pi-squad-child-abcd1234")  # an older pi-squad's: no owner
    recent = scratch(tmp_path, "pi-squad-child-efgh5678")
    aged = time.time() - LEGACY_STALE_SECONDS - 60
    os.utime(old, (aged, aged))
    other = scratch(tmp_path, "pi-squad-worker-x")
    (tmp_path / "pi-squad-child-1.1-file").write_text("not a directory")
    outside = scratch(tmp_path / "elsewhere", "kept")
    (tmp_path / f"pi-squad-child-{dead_pid()}.1-link").symlink_to(outside)
    removed = sweep_stale_scratch(str(tmp_path))
    assert sorted(removed) == sorted([str(stale), str(old)])
    for kept in (live, recent, other, outside, tmp_path / "pi-squad-child-1.1-file"):
        assert kept.exists(), kept
    assert (outside / "agent" / "auth.json").exists(), "a link is never followed"


def test_the_first_scratch_in_a_directory_sweeps_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(child_scratch, "_swept", set())
    stale = scratch(tmp_path, f"pi-squad-child-{dead_pid()}.1-c3")
    make_scratch(str(tmp_path))
    assert not stale.exists(), "swept at the first start"
    again = scratch(tmp_path, f"pi-squad-child-{dead_pid()}.1-d4")
    make_scratch(str(tmp_path))
    assert again.exists(), "not swept at every start"


def test_a_delegated_workers_directories_are_named_and_swept_the_same_way(tmp_path: Path) -> None:
    made = Path(make_scratch(str(tmp_path), prefix=WORKER_DIR_PREFIX))
    assert made.name.startswith(f"pi-squad-worker-{os.getpid()}.")
    stale = scratch(tmp_path, f"pi-squad-worker-{dead_pid()}.1-c3")
    child = scratch(tmp_path, f"pi-squad-child-{dead_pid()}.1-d4")
    assert sweep_stale_scratch(str(tmp_path), prefix=WORKER_DIR_PREFIX) == [str(stale)]
    assert made.exists()
    assert child.exists(), "each sweep takes its own kind only"
