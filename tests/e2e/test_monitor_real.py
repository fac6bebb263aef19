"""Issue 13 item 4 with real Pi: a child stuck repeating one ``bash`` call is steered by the
monitor through Pi's own steering, stops looping and finishes; the steer is in the task's
history and on its record."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.lock_fasteners import FastenersLockFactory
from adapters.pi_runtime import PiRuntime
from adapters.scripted_model import ScriptedModelServer
from adapters.store_files import FileStore
from tests.e2e.real_pi import CLI, REPO, RealPiWorld
from tests.host_fs import host_file_system

pytestmark = pytest.mark.realpi

DEMO = REPO / "entrypoints" / "demo"


@pytest.fixture
def world(tmp_path: Path, runtime: PiRuntime) -> Iterator[RealPiWorld]:
    with ScriptedModelServer("diligent") as model:
        world = RealPiWorld(base=tmp_path, runtime=runtime, model=model)
        world.write_models()
        world.agents.mkdir(parents=True)
        for definition in (DEMO / "agents").glob("*.json"):
            document = json.loads(definition.read_text(encoding="utf-8"))
            document["prompt"] = document["prompt"].replace(
                "scripted-policy: diligent", "scripted-policy: looper"
            )
            (world.agents / definition.name).write_text(json.dumps(document), encoding="utf-8")
        shutil.copyfile(DEMO / "demo.spec.json", world.project / "demo.spec.json")
        yield world


def test_a_looping_child_is_steered_and_finishes(world: RealPiWorld) -> None:
    digest = (DEMO / "demo.spec.json.sha256").read_text().split()[0]
    env = {
        **world.pi_environment(),
        "PI_SQUAD_ROOT": str(world.root),
        "PI_SQUAD_ISOLATION": "none",
        "PI_SQUAD_REPEAT_LIMIT": "3",
    }
    argv = [
        *CLI,
        "run",
        "--spec-file",
        str(world.project / "demo.spec.json"),
        "--spec-sha256",
        digest,
        "--cwd",
        str(world.project),
        "--provider",
        "fake",
        "--model",
        "fake-model",
        "--json",
    ]
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
