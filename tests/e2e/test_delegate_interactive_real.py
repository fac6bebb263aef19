"""Issue 30, Deliver 6 on a real interactive ``pi`` (not RPC mode) in a pseudo-terminal, the
screen rendered by a terminal emulator: the main model calls ``delegate`` once; while the job's
worker (real Pi, the scripted model's ``worker`` policy, offline) runs, the row above the
editor shows it running; when it settles a notice names it, its outcome and ``/delegate
collect``; the status item says ``delegate: 1 ready``; ``/delegate status`` prints every job
with its state; and the call's transcript entry is drawn for a person."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.pi_runtime import PiRuntime
from adapters.scripted_model import ScriptedModelServer
from tests.e2e.delegation_world import Delegation, consult_request, main_pi_environment
from tests.e2e.real_pi import scripted_interactive_argv
from tests.e2e.terminal import Terminal

pytestmark = pytest.mark.realpi

# The worker searches this many times before it answers: long enough to be seen running.
SEARCHES = 10
REQUEST = consult_request(f"slow\nworker-searches: {SEARCHES}", SEARCHES + 4)


@pytest.fixture
def delegation(tmp_path: Path, runtime: PiRuntime) -> Iterator[Delegation]:
    with ScriptedModelServer("worker", chunk_delay=0.05) as model:
        world = Delegation(base=tmp_path, model=model)
        world.setup(maxRequests=SEARCHES + 4)
        yield world


def interactive_main_pi(world: Delegation, runtime: PiRuntime) -> Terminal:
    """The user's Pi with the package, its model told to call ``delegate`` once."""
    markers = (
        f"scripted-policy: tool-once\nscripted-tool: delegate\nscripted-args: {json.dumps(REQUEST)}"
    )
    env = main_pi_environment(world, runtime)
    return Terminal(scripted_interactive_argv(runtime, markers), env, world.project)


def test_the_row_the_notice_and_delegate_status_are_on_screen(
    delegation: Delegation, runtime: PiRuntime
) -> None:
    terminal = interactive_main_pi(delegation, runtime)
    try:
        terminal.wait_for("fake-model", timeout=60)
        terminal.type("Delegate.\r")
        # The call's entry in the transcript, and the row while the worker searches.
        terminal.wait_for("delegate run — batch b-", timeout=90)
        terminal.wait_for("▸ k1 (consult) running", timeout=60)
        terminal.wait_for("delegate: 1 running", timeout=10)
        # Settled: the notice names the job, its outcome and the next command.
        screen = terminal.wait_for("next: /delegate collect", timeout=120)
        assert "delegate: job k1 (j-" in screen
        terminal.wait_for("✓ k1 (consult) ready · 1/1 covered", timeout=10)
        terminal.wait_for("delegate: 1 ready", timeout=10)
        terminal.type("/delegate status\r")
        screen = terminal.wait_for("delegate status — session default", timeout=60)
        assert "✓ k1 (consult) ready · 1/1 covered · " in screen
    finally:
        terminal.close()
    assert not (delegation.base / "home" / ".pi").exists()
