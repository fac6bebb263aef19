"""Issue 31 item 3 in a real interactive Pi (pexpect + pyte, the scripted model): while a squad's
children read, the widget shows a running child's current tool and elapsed time; alt+i opens
the inspect overlay, which shows that child's current tool, and Esc closes it, leaving the
editor usable. The scripted model streams slowly, so the children are still at work when the
overlay opens."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.pi_runtime import PiRuntime
from tests.e2e.main_pi import MainPiWorld, slow_demo_world, squad_starting_terminal

pytestmark = pytest.mark.realpi

# A running task's widget line: its current tool, then its elapsed time.
RUNNING_TOOL = re.compile(r"⏳ \S+ \(\w+\) in_progress .*· tool \S+ · (\d+m )?\d+s")
OVERLAY = "pi-squad inspect · child "
ALT_I = "\x1bi"
ESCAPE = "\x1b"


@pytest.fixture
def world(tmp_path: Path, runtime: PiRuntime) -> Iterator[MainPiWorld]:
    yield from slow_demo_world(tmp_path, runtime, chunk_delay=0.15)


def test_the_inspect_overlay_opens_shows_a_childs_current_tool_and_closes(
    world: MainPiWorld,
) -> None:
    terminal = squad_starting_terminal(world)
    try:
        terminal.wait_for("fake-model", timeout=60)
        terminal.type("Start the squad.\r")
        terminal.wait_for(RUNNING_TOOL, timeout=120)
        terminal.child.send(ALT_I)  # one write: Pi reads ESC then `i` apart as two keys
        screen = terminal.wait_for(OVERLAY, timeout=30)
        assert re.search(r"now: tool \S+", screen), screen
        terminal.type(ESCAPE)
        terminal.wait_for(lambda text: OVERLAY not in text, timeout=30)
        terminal.type("/squad status\r")
        terminal.wait_for("Squad: ", timeout=30)
    finally:
        terminal.close()
