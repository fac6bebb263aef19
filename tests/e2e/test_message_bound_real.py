"""A child that streams one huge tool argument is stopped at the message bound on real Pi: Pi
parses a growing argument again at every piece, so a few megabytes stall it for minutes; the
monitor stops it as soon as the message passes ``PI_SQUAD_MAX_MESSAGE_BYTES`` and status says
why."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.pi_runtime import PiRuntime
from tests.e2e.real_pi import RealPiWorld, demo_world, run_argv

pytestmark = pytest.mark.realpi

BOUND = 8 * 1024
ARGUMENT = 64 * 1024  # at the scripted model's 16-byte pieces, Pi needs ~6 s to take it all


@pytest.fixture
def world(tmp_path: Path, runtime: PiRuntime) -> Iterator[RealPiWorld]:
    yield from demo_world(RealPiWorld, tmp_path, runtime)


def test_a_child_streaming_a_huge_tool_argument_is_stopped_at_the_bound(
    world: RealPiWorld,
) -> None:
    digest = world.stage_demo("tool-once")
    huge = json.dumps({"command": "echo " + "x" * ARGUMENT})
    for definition in world.agents.glob("*.json"):
        document = json.loads(definition.read_text(encoding="utf-8"))
        document["prompt"] += f"\nscripted-tool: bash\nscripted-args: {huge}\n"
        definition.write_text(json.dumps(document), encoding="utf-8")
    env = {
        **world.pi_environment(),
        "PI_SQUAD_ROOT": str(world.root),
        "PI_SQUAD_MAX_MESSAGE_BYTES": str(BOUND),
    }
    argv = run_argv(world.project / "demo.spec.json", digest, world.project, "--json")
    started = time.monotonic()
    done = subprocess.run(
        argv, env=env, cwd=world.project, capture_output=True, text=True, timeout=300, check=False
    )
    elapsed = time.monotonic() - started
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, done.stdout[-2000:] + done.stderr[-2000:]
    summary = json.loads(lines[-1])
    (design,) = [task for task in summary["tasks"] if task["taskId"] == "design"]
    assert design["status"] == "failed", summary
    status = world.cli("status", summary["squadId"], "--json")
    (task,) = [t for t in json.loads(status.stdout)["tasks"] if t["taskId"] == "design"]
    assert "message too large" in json.dumps(task), task
    assert "PI_SQUAD_MAX_MESSAGE_BYTES" in json.dumps(task)
    assert elapsed < 120, f"the run took {elapsed:.0f} s"
