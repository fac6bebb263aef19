"""Issue 13, the test that must exist: a real interactive ``pi`` (not RPC mode) in a pseudo-
terminal, the screen rendered by a terminal emulator, with the package loaded and the scripted
model. The main agent calls ``squad``; while the children read, the screen shows the live view
with each task's read (``not started``, ``reading n/N``); ``/squad`` works; at review the notice
shows each task's attestation state. And with the bridge unreachable: ``bash`` still works in
the main session and the error is on screen."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.pi_runtime import PiRuntime
from tests.e2e.real_pi import CLI, RealPiWorld, demo_world, scripted_interactive_argv
from tests.e2e.terminal import Terminal

pytestmark = pytest.mark.realpi

# A task's read as the widget words it (domain/attestation/words.py), never a false "invalid".
CHUNKS = re.compile(r"attestation (not started|reading \d+/\d+)")


def interactive_pi(world: RealPiWorld, markers: str, **environment: str) -> Terminal:
    env = world.pi_environment()
    env.update(PI_SQUAD_ROOT=str(world.root), PI_SQUAD_PROVIDER="fake", **environment)
    env["PI_SQUAD_MODEL"] = "fake-model"
    env.pop("PI_SQUAD_CHILD", None)
    return Terminal(scripted_interactive_argv(world.runtime, markers), env, world.project)


@pytest.fixture
def world(tmp_path: Path, runtime: PiRuntime) -> Iterator[RealPiWorld]:
    yield from demo_world(RealPiWorld, tmp_path, runtime)


def test_the_squad_is_visible_in_the_terminal_from_start_to_review(tmp_path: Path) -> None:
    """Exactly what the README tells a new user to type: ``pi-squad demo --pi``."""
    workspace = tmp_path / "demo"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PI_SQUAD")}
    env["HOME"] = str(tmp_path / "home")  # nothing of the user's own Pi is read or written
    terminal = Terminal([*CLI, "demo", "--pi", "--workspace", str(workspace)], env, tmp_path)
    try:
        terminal.wait_for("fake-model", timeout=60)
        terminal.type("Start the squad.\r")
        screen = terminal.wait_for(CHUNKS, timeout=90)
        root = workspace / "root"
        (squad_id,) = [p.name for p in root.iterdir() if not p.name.startswith(".")]
        assert f"squad {squad_id}" in screen, "the widget names the squad"
        terminal.wait_for("awaiting orchestrator review", timeout=150)
        # The review notice itself: every task's attestation state, and the count that verify.
        screen = terminal.wait_for(re.compile(r"Attestations: (\d+) of \1 required verify"), 30)
        assert re.search(r": done · attestation valid", screen), screen
        # The demo's scripted orchestrator records the review once the gate reaches it.
        terminal.wait_for("accepted as done", timeout=60)
        terminal.type("/squad status\r")
        terminal.wait_for(f"Squad: {squad_id}", timeout=30)
        terminal.wait_for("Status: done", timeout=30)
    finally:
        terminal.close()
    assert not (tmp_path / "home" / ".pi").exists()


def test_without_a_bridge_bash_works_and_the_error_is_on_screen(world: RealPiWorld) -> None:
    markers = "scripted-policy: bash-once\nscripted-bash: echo hello-from-$((6*7))"
    missing = json.dumps(["/nonexistent/pi-squad", "bridge"])
    terminal = interactive_pi(world, markers, PI_SQUAD_BRIDGE=missing)
    try:
        terminal.wait_for("pi-squad is unavailable", timeout=60)
        terminal.type("Run it.\r")
        screen = terminal.wait_for("hello-from-42", timeout=60)
        assert "pi-squad bridge failure" not in screen
    finally:
        terminal.close()
    assert os.environ.get("PI_SQUAD_CHILD") != "1"
