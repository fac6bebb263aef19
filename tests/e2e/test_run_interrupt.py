"""Issue 13 item 5 with real Pi: Ctrl+C in ``pi-squad run`` stops cleanly (no traceback, exit
130), says what happened to the live tasks and what to type, and leaves a squad that the next
``run --squad`` takes to review."""

from __future__ import annotations

import hashlib
import json
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.pi_runtime import PiRuntime
from adapters.scripted_model import ScriptedModelServer
from tests.e2e.real_pi import CLI, REPO, RealPiWorld

pytestmark = pytest.mark.realpi

DEMO = REPO / "entrypoints" / "demo"


@pytest.fixture
def world(tmp_path: Path, runtime: PiRuntime) -> Iterator[RealPiWorld]:
    with ScriptedModelServer("diligent") as model:
        world = RealPiWorld(base=tmp_path, runtime=runtime, model=model)
        world.write_models()
        world.agents.mkdir(parents=True)
        for definition in (DEMO / "agents").glob("*.json"):
            shutil.copyfile(definition, world.agents / definition.name)
        shutil.copyfile(DEMO / "demo.spec.json", world.project / "demo.spec.json")
        yield world


def run_command(world: RealPiWorld) -> list[str]:
    return [*CLI, "run", "--cwd", str(world.project), "--provider", "fake", "--model", "fake-model"]


def test_ctrl_c_in_run_suspends_cleanly_and_the_squad_resumes(world: RealPiWorld) -> None:
    spec = world.project / "demo.spec.json"
    digest = hashlib.sha256(spec.read_bytes()).hexdigest()
    env = {**world.pi_environment(), "PI_SQUAD_ROOT": str(world.root), "PI_SQUAD_ISOLATION": "none"}
    argv = [*run_command(world), "--spec-file", str(spec), "--spec-sha256", digest]
    process = subprocess.Popen(
        argv, env=env, cwd=world.project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    seen: list[str] = []
    for line in process.stdout:
        seen.append(line)
        if "in_progress" in line:
            process.send_signal(signal.SIGINT)
            break
    else:
        pytest.fail("no task ever ran:\n" + "".join(seen))
    rest, stderr = process.communicate(timeout=60)
    output = "".join(seen) + rest
    assert process.returncode == 130, output + stderr
    assert "Traceback" not in stderr, stderr
    assert "stopped: interrupted" in output
    assert "live tasks are suspended on their sessions" in output
    (squad_id,) = [p.name for p in world.root.iterdir() if not p.name.startswith(".")]
    assert (
        f"next: pi-squad modify {squad_id} resume, then pi-squad run --squad {squad_id}" in output
    )

    stalled = subprocess.run(
        [*run_command(world), "--squad", squad_id[:12], "--json"],
        env=env,
        cwd=world.project,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    summary = json.loads(stalled.stdout.splitlines()[-1])
    assert summary["reason"] == "stalled", "a new driver never resumes a suspended task itself"
    assert summary["next"].endswith(
        f"pi-squad modify {squad_id} resume, then pi-squad run --squad {squad_id}"
    )
    modified = subprocess.run(
        [*CLI, "modify", squad_id, "resume"], env=env, capture_output=True, text=True, check=False
    )
    assert modified.returncode == 0, modified.stdout + modified.stderr
    resumed = subprocess.run(
        [*run_command(world), "--squad", squad_id[:12], "--json"],
        env=env,
        cwd=world.project,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    summary = json.loads(resumed.stdout.splitlines()[-1])
    assert summary["status"] == "review"
    assert {t["attestation"] for t in summary["tasks"]} == {"valid"}
    assert summary["next"].startswith(f"pi-squad report {squad_id}")
