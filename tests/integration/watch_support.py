"""What the ``pi-squad watch`` tests share: snapshots checked in under
``tests/integration/snapshots/`` (set ``UPDATE_SNAPSHOTS=1`` to rewrite them after a deliberate
format change), a squad with work running, and the frames a watcher reads of it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from application.squads.status import SquadStatusReader
from entrypoints.frames import FrameSource
from tests.integration.operator_support import demo_like_world, read_chunks, start_task
from tests.runtime_world import RuntimeWorld

SNAPSHOTS = Path(__file__).parent / "snapshots"
INTERRUPTED = 130
needs_pty = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")


def check_snapshot(name: str, actual: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8", newline="\n")
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, f"{name} differs; UPDATE_SNAPSHOTS=1 rewrites it"


def running_world(base: Path) -> RuntimeWorld:
    """design in progress with two of five chunks read; build and qa blocked behind it."""
    world = demo_like_world(base)
    start_task(world, "design")
    read_chunks(world, "design", [0, 3])
    return world


def frame_source(world: RuntimeWorld) -> FrameSource:
    reader = SquadStatusReader(store=world.store, auditor=world.auditor, clock=world.clock)
    return FrameSource(reader=reader, store=world.store, clock=world.clock, squad_id=world.squad_id)
