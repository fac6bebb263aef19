"""Issue 31 in a real interactive Pi: the startup screen lists this package's extension as
``pi-squad`` (Pi names a local extension by its path without the final ``index.ts``; it used to
be listed as ``pi``), and Tab completes a ``/squad`` subcommand through the bridge's
``complete`` (squad ids: ``tests/integration/main_role/test_command_words.py``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.pi_runtime import PiRuntime
from tests.e2e.real_pi import RealPiWorld, demo_world, scripted_interactive_argv
from tests.e2e.terminal import Terminal

pytestmark = pytest.mark.realpi
# The editor's line once Tab completed it (not the command's description, which lists them all).
EDITOR_SQUAD_STATUS = re.compile(r"^\W*/squad status\W*$", re.MULTILINE)


@pytest.fixture
def world(tmp_path: Path, runtime: PiRuntime) -> Iterator[RealPiWorld]:
    yield from demo_world(RealPiWorld, tmp_path, runtime)


def interactive_pi(world: RealPiWorld) -> Terminal:
    env = world.pi_environment()
    env.update(PI_SQUAD_ROOT=str(world.root))
    env.pop("PI_SQUAD_CHILD", None)
    argv = scripted_interactive_argv(world.runtime, "scripted-policy: echo")
    return Terminal(argv, env, world.project)


def test_the_startup_screen_lists_the_extension_as_pi_squad(world: RealPiWorld) -> None:
    terminal = interactive_pi(world)
    try:
        terminal.wait_for("Extensions", timeout=60)
        terminal.wait_for("fake-model", timeout=60)
        screen = terminal.text()
    finally:
        terminal.close()
    listing = screen[screen.index("Extensions") :].splitlines()[:3]
    assert any(re.search(r"(^|\W)pi-squad(\W|$)", line) for line in listing), screen
    assert not any(re.search(r"(^|[^-\w])pi([^-\w]|$)", line) for line in listing), screen


def test_tab_completes_a_squad_subcommand(world: RealPiWorld) -> None:
    terminal = interactive_pi(world)
    try:
        terminal.wait_for("fake-model", timeout=60)
        terminal.type("/squad stat\t")
        terminal.wait_for(EDITOR_SQUAD_STATUS, timeout=30)
    finally:
        terminal.close()
