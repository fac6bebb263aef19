"""Issue 31 item 2 in a real interactive Pi (pexpect + pyte, the scripted model): after
``/squad pause`` and then ``/squad cancel`` the squad stays in the widget and the footer, with its
state and the ``/squad`` command that moves it on (they used to vanish), and the cancel says who
cancelled and when. The scripted model streams slowly, so the children are still at work when
the person pauses the squad."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.pi_runtime import PiRuntime
from tests.e2e.main_pi import MainPiWorld, slow_demo_world, squad_starting_terminal

pytestmark = pytest.mark.realpi


@pytest.fixture
def world(tmp_path: Path, runtime: PiRuntime) -> Iterator[MainPiWorld]:
    yield from slow_demo_world(tmp_path, runtime, chunk_delay=0.15)


def test_pause_and_cancel_keep_the_squad_in_view_with_its_state_and_next_command(
    world: MainPiWorld,
) -> None:
    terminal = squad_starting_terminal(world)
    try:
        terminal.wait_for("fake-model", timeout=60)
        terminal.type("Start the squad.\r")
        terminal.wait_for("in_progress", timeout=120)
        (squad_id,) = world.squads()
        terminal.type(f"/squad pause {squad_id}\r")
        screen = terminal.wait_for(f"next: /squad resume {squad_id} · /squad dismiss", timeout=30)
        assert f"squad {squad_id} · paused · " in screen, screen
        assert f"squad {squad_id}: paused " in screen, "the footer keeps it too"
        terminal.type(f"/squad cancel {squad_id}\r")
        screen = terminal.wait_for(f"next: /squad resume {squad_id} restarts it", timeout=30)
        assert f"squad {squad_id} · cancelled by you (/squad cancel) at " in screen, screen
        assert f"squad {squad_id}: cancelled " in screen, "the footer says cancelled"
        assert f"squad {squad_id}: failed" not in screen
        terminal.type(f"/squad status {squad_id}\r")
        terminal.wait_for("Status: cancelled by you (/squad cancel) at ", timeout=30)
    finally:
        terminal.close()
