"""Issue 13 item 5 with real Pi: Ctrl+C in ``pi-squad run`` stops cleanly (no traceback, exit
130), says what happened to the live tasks and what to type, and leaves a squad that the next
``run --squad`` takes to review."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.pi_runtime import PiRuntime
from tests.e2e.real_pi import CLI, RealPiWorld, demo_world, run_argv

pytestmark = pytest.mark.realpi


@pytest.fixture
def world(tmp_path: Path, runtime: PiRuntime) -> Iterator[RealPiWorld]:
    yield from demo_world(RealPiWorld, tmp_path, runtime)


def run_json(world: RealPiWorld, env: dict[str, str], squad: str) -> dict[str, Any]:
    """``pi-squad run --squad SQUAD --json``'s summary."""
    done = subprocess.run(
        [*CLI, "run", "--squad", squad, "--provider", "fake", "--model", "fake-model", "--json"],
        env=env,
        cwd=world.project,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    summary: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    summary["exitCode"] = done.returncode
    return summary


def test_ctrl_c_in_run_suspends_cleanly_and_the_squad_resumes(world: RealPiWorld) -> None:
    digest = world.stage_demo()
    env = {**world.pi_environment(), "PI_SQUAD_ROOT": str(world.root), "PI_SQUAD_ISOLATION": "none"}
    argv = run_argv(world.project / "demo.spec.json", digest, world.project)
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

    summary = run_json(world, env, squad_id[:12])
    assert summary["reason"] == "stalled", "a new driver never resumes a suspended task itself"
    assert summary["next"].endswith(
        f"pi-squad modify {squad_id} resume, then pi-squad run --squad {squad_id}"
    )
    modified = subprocess.run(
        [*CLI, "modify", squad_id, "resume"], env=env, capture_output=True, text=True, check=False
    )
    assert modified.returncode == 0, modified.stdout + modified.stderr
    summary = run_json(world, env, squad_id[:12])
    # The whole summary (each task's status and error) when it fails, never pytest's cut repr.
    assert summary["exitCode"] == 0, json.dumps(summary, indent=1)
    assert summary["status"] == "review"
    assert {t["attestation"] for t in summary["tasks"]} == {"valid"}
    assert summary["next"].startswith(f"pi-squad report {squad_id}")


def test_a_failing_provider_shows_its_reason_in_status_and_what_to_type(
    world: RealPiWorld,
) -> None:
    """The README's own ``--provider anthropic`` example, with no key anywhere."""
    digest = world.stage_demo()
    env = {
        **world.pi_environment(),
        "PI_SQUAD_ROOT": str(world.root),
        "PI_SQUAD_ISOLATION": "none",
        "HOME": str(world.base / "home"),
    }
    env.pop("ANTHROPIC_API_KEY", None)
    argv = run_argv(world.project / "demo.spec.json", digest, world.project)
    argv[argv.index("fake")] = "anthropic"
    argv[argv.index("fake-model")] = "claude-sonnet-4-20250514"
    done = subprocess.run(
        argv, env=env, cwd=world.project, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "No API key found for anthropic" in done.stdout, "the run summary says why"
    assert "next: pi-squad status" in done.stdout
    (squad_id,) = [p.name for p in world.root.iterdir() if not p.name.startswith(".")]
    status = subprocess.run(
        [*CLI, "status", squad_id], env=env, capture_output=True, text=True, check=False
    )
    reasons = [line for line in status.stdout.splitlines() if line.startswith("    reason: ")]
    assert reasons, status.stdout
    assert "No API key found for anthropic" in reasons[0]
    assert f"(full text: pi-squad report {squad_id})" in reasons[0]
