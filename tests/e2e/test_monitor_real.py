"""Issue 13 item 4 with real Pi: a child stuck repeating one ``bash`` call is steered by the
monitor through Pi's own steering, stops looping and finishes; the steer is in the task's
history and on its record."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.lock_fasteners import FastenersLockFactory
from adapters.pi_runtime import PiRuntime
from adapters.store_files import FileStore
from tests.e2e.real_pi import RealPiWorld, demo_world, run_argv
from tests.host_fs import host_file_system

pytestmark = pytest.mark.realpi


@pytest.fixture
def world(tmp_path: Path, runtime: PiRuntime) -> Iterator[RealPiWorld]:
    yield from demo_world(RealPiWorld, tmp_path, runtime, policy="looper")


def test_a_looping_child_is_steered_and_finishes(world: RealPiWorld) -> None:
    env = {
        **world.pi_environment(),
        "PI_SQUAD_ROOT": str(world.root),
        "PI_SQUAD_ISOLATION": "none",
        "PI_SQUAD_REPEAT_LIMIT": "3",
    }
    digest = world.stage_demo("looper")
    argv = run_argv(world.project / "demo.spec.json", digest, world.project, "--json")
    done = subprocess.run(
        argv, env=env, cwd=world.project, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["status"] == "review"
    store = FileStore(fs=host_file_system(), locks=FastenersLockFactory(), root=str(world.root))
    snapshot = store.snapshot(summary["squadId"])
    for task_id, task in snapshot.tasks.items():
        texts = [m.text for m in store.messages(summary["squadId"], task_id)]
        assert task.monitor == "steered (repeated_call)", "\n".join([task_id, *texts])
        assert "monitor: steered (repeated_call)" in texts
        assert any("Steered by the monitor after 3 identical calls" in t for t in texts), texts
