"""Issue 28, break 1, under real Pi 0.80.10: a project a sibling planted code in, which the user
trusts. No child acts on it.

Before the demo squad runs, the project holds what an earlier, attested child could have
written: a ``.pi/settings.json`` with a missing npm package and an ``npmCommand`` that is a
script in the project. The user's Pi agent directory trusts the project (``trust.json``), and the
run's environment is a user's (no ``PI_OFFLINE``). A Pi that trusted the project would install
the missing package with that command while it starts, ``--no-extensions`` notwithstanding,
and the script would leave a marker beside itself. Every child starts with ``--no-approve`` and
``PI_OFFLINE=1``, so no marker appears and the squad reaches review on its children's own
reads, confined or not.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.isolation.landlock import probe_landlock
from adapters.pi_runtime import PiRuntime
from tests.e2e.real_pi import DEMO_SPEC, RealPiWorld, demo_world, isolation_settings

pytestmark = pytest.mark.realpi

RUN_TIMEOUT = 180.0
MARKER = "PLANTED-NPM-COMMAND-RAN"
PLANTED_PACKAGE = "npm:pi-squad-planted-package"


def plant(project: Path) -> Path:
    """The planted settings and the command they name; the marker the command would write."""
    script = project / ".pi" / "planted-npm.sh"
    script.parent.mkdir(parents=True, exist_ok=True)
    marker = project / MARKER
    # Any call at all is the attack: Pi asks the command before it would install anything.
    script.write_text(f'#!/bin/sh\necho "$$ $*" >> {marker}\nexit 1\n', encoding="utf-8")
    script.chmod(0o755)
    settings = {"packages": [PLANTED_PACKAGE], "npmCommand": [str(script)]}
    (project / ".pi" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    return marker


@pytest.fixture
def world(tmp_path: Path, runtime: PiRuntime) -> Iterator[RealPiWorld]:
    yield from demo_world(RealPiWorld, tmp_path, runtime)


def trust_the_project(world: RealPiWorld) -> None:
    """As ``/trust`` in the user's own Pi would have saved it."""
    agent_dir = Path(world.pi_environment()["PI_CODING_AGENT_DIR"])
    trust = {os.path.realpath(world.project): True}
    (agent_dir / "trust.json").write_text(json.dumps(trust), encoding="utf-8")


def user_environment(world: RealPiWorld, isolation: str | None) -> dict[str, str]:
    """A user's environment: Pi's agent directory and runtime, but not the offline switch the
    test helpers set for every Pi they start."""
    return world.user_environment("PI_OFFLINE") | isolation_settings(isolation)


def run_demo(world: RealPiWorld, isolation: str | None) -> tuple[int, dict[str, Any], str]:
    (world.base / "home").mkdir(exist_ok=True)
    env = user_environment(world, isolation)
    done = world.run_squad(world.project / DEMO_SPEC, env, RUN_TIMEOUT)
    return done.returncode, done.summary, done.stderr


@pytest.mark.parametrize("isolation", [None, "none"], ids=["landlock", "unconfined"])
def test_no_child_runs_the_npm_command_a_trusted_project_names(
    world: RealPiWorld, isolation: str | None
) -> None:
    if isolation is None and probe_landlock().mode != "landlock":
        pytest.skip(f"no usable Landlock on this kernel: {probe_landlock().reason}")
    marker = plant(world.project)
    trust_the_project(world)

    code, summary, stderr = run_demo(world, isolation)

    ran = marker.read_text(encoding="utf-8") if marker.exists() else ""
    assert ran == "", f"a child's Pi ran the planted npmCommand: {ran!r}"
    assert not (world.project / ".pi" / "npm").exists(), "no project package was installed"
    assert code == 0, f"{summary} {stderr[-2000:]}"
    assert summary["status"] == "review", summary
    assert {t["attestation"] for t in summary["tasks"]} == {"valid"}, summary
