"""A main Pi that calls ``flow`` through the scripted model, its children real Pi processes: the
world of the flow-face tests, the prompt that makes the call, and what its records say."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import attrs

from adapters.pi_runtime import pi_command
from tests.e2e.main_pi import MainPiWorld
from tests.e2e.pi_rpc_client import PiRpcClient, Record
from tests.e2e.real_pi import EXTENSION
from tests.e2e.terminal import Terminal

CARD = "pi-squad-flow-card"
WHY = "e2e proof of the faces"


@attrs.define
class FacesWorld(MainPiWorld):
    """A main Pi with a home of its own whose sessions are kept (``sessions``)."""

    def environment(self) -> dict[str, str]:
        return super().environment() | {"HOME": str(self.base / "home")}

    @property
    def sessions(self) -> Path:
        return self.base / "sessions"

    def main_pi(self, session: tuple[str, ...] | None = None) -> PiRpcClient:
        return super().main_pi(session or ("--session-dir", str(self.sessions)))


def flow_prompt(arguments: dict[str, Any]) -> dict[str, Any]:
    message = (
        "Run the flow.\nscripted-policy: tool-once\nscripted-tool: flow\n"
        f"scripted-args: {json.dumps(arguments)}"
    )
    return {"type": "prompt", "message": message}


def flow_terminal(world: FacesWorld, arguments: dict[str, Any]) -> Terminal:
    """An interactive Pi in a terminal whose scripted model calls ``flow`` with ``arguments``
    once prompted (``Run the flow.``), its footer already drawn."""
    markers = (
        f"scripted-policy: tool-once\nscripted-tool: flow\nscripted-args: {json.dumps(arguments)}"
    )
    argv = [*pi_command(world.runtime), "--no-session", "-e", str(EXTENSION)]
    argv += ["--provider", "fake", "--model", "fake-model", "--append-system-prompt", markers]
    terminal = Terminal(argv, world.environment(), world.project)
    try:
        terminal.wait_for("fake-model", timeout=60)
    except BaseException:
        terminal.close()
        raise
    return terminal


def is_flow_end(record: Record) -> bool:
    return record.get("type") == "tool_execution_end" and record.get("toolName") == "flow"


def result_text(record: Record) -> str:
    return "".join(block.get("text", "") for block in record["result"]["content"])


def children_of(world: FacesWorld) -> list[str]:
    """The processes of the flow's children: a child Pi, its bridge and whatever its bash runs
    all carry ``PI_SQUAD_CHILD=1`` and this world's squad root in their environment (Pi renames
    its process, so its command line would not tell)."""
    marks = (b"PI_SQUAD_CHILD=1", f"PI_SQUAD_ROOT={world.root}".encode())
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            argv = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if all(mark in environ for mark in marks):
            found.append(f"{entry.name}: {argv.decode('utf-8', 'replace')}")
    return found


def wait_for_the_childs_command(world: FacesWorld, command: str) -> None:
    """Until a child runs ``command`` (its bash, say)."""
    deadline = time.monotonic() + 30
    while not any(command in line for line in children_of(world)):
        assert time.monotonic() < deadline, f"no child ran {command!r}"
        time.sleep(0.1)


def wait_until_no_child_is_left(world: FacesWorld) -> None:
    deadline = time.monotonic() + 15
    while children_of(world):
        assert time.monotonic() < deadline, f"still running: {children_of(world)}"
        time.sleep(0.1)
