"""A main Pi 0.80.10 in RPC mode with the pi-squad package loaded, on the scripted model, over a
squad root its children (real Pi processes) share: the world of the end-to-end tests of the
squad tool, flows and delegation from a main session."""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import attrs
import pytest

from adapters.pi_runtime import PiRuntime
from adapters.scripted_model import ScriptedModelServer
from adapters.store.files import FileStore
from adapters.store.lock import FastenersLockFactory
from application.ports import SquadSnapshot
from domain.squad.model import SquadStatus
from tests.e2e.pi_rpc_client import PiRpcClient
from tests.e2e.real_pi import (
    EXTENSION,
    RealPiWorld,
    scripted_interactive_argv,
    scripted_rpc_argv,
)
from tests.e2e.terminal import Terminal
from tests.host_fs import host_file_system

BRIDGE = json.dumps([sys.executable, "-m", "entrypoints.bridge"])


@attrs.define
class MainPiWorld(RealPiWorld):
    """The environment of a main Pi (not a child) that starts children through the package's
    bridge, the main Pi itself, and the squad root's store."""

    def environment(self) -> dict[str, str]:
        env = self.pi_environment()
        env.update(
            PI_SQUAD_ROOT=str(self.root),
            PI_SQUAD_BRIDGE=BRIDGE,
            PI_SQUAD_PROVIDER="fake",
            PI_SQUAD_MODEL="fake-model",
        )
        env.pop("PI_SQUAD_CHILD", None)
        return env

    def main_pi(self, session: tuple[str, ...] = ("--no-session",)) -> PiRpcClient:
        argv = scripted_rpc_argv(self.runtime, "-e", str(EXTENSION), session=session)
        return PiRpcClient(argv, self.environment(), self.project)

    def store(self) -> FileStore:
        return FileStore(fs=host_file_system(), locks=FastenersLockFactory(), root=str(self.root))

    def squads(self) -> list[str]:
        return self.store().list_squad_ids()

    def main_model_calls(self) -> str:
        """What the scripted model answered the main Pi (its requests carry the squad tool's
        marker), one line per call: how many messages it sent, the last one's role and text,
        and the reply. Said when a wait fails, to tell a call never made from one answered."""
        lines = []
        for exchange in self.model.exchanges():
            messages = exchange.request.get("messages") or []
            if "scripted-tool: squad" not in json.dumps(messages[:3]):
                continue
            last = messages[-1] if messages else {}
            lines.append(
                f"{len(messages)} messages, last {last.get('role')}: "
                f"{str(last.get('content'))[:80]!r} -> {exchange.reply.text[:60]!r} "
                f"{[call.name for call in exchange.reply.tool_calls]}"
            )
        return f"the main Pi's model calls ({len(lines)}):\n" + "\n".join(lines)

    def wait_for_status(
        self, squad_id: str, wanted: set[SquadStatus], timeout: float = 150.0
    ) -> SquadSnapshot:
        deadline = time.monotonic() + timeout
        while True:
            snapshot = self.store().snapshot(squad_id)
            if snapshot.squad.status in wanted:
                return snapshot
            if time.monotonic() > deadline:
                statuses = {t: str(v.status) for t, v in snapshot.tasks.items()}
                pytest.fail(f"squad stayed {snapshot.squad.status}: {statuses}")
            time.sleep(0.25)


def call_tool_once(
    client: PiRpcClient, ask: str, tool: str, arguments: Mapping[str, object]
) -> tuple[str, bool]:
    """A main Pi's turn in which the scripted model, asked ``ask``, calls ``tool`` once with
    ``arguments``: the last tool result's text and whether it is an error."""
    prompt = (
        f"{ask}\nscripted-policy: tool-once\nscripted-tool: {tool}\n"
        f"scripted-args: {json.dumps(arguments)}"
    )
    records = client.prompt(prompt, timeout=90)
    results = [
        r["message"]
        for r in records
        if r.get("type") == "message_end" and r["message"].get("role") == "toolResult"
    ]
    assert results, f"the {tool} tool ran"
    text = "".join(block.get("text", "") for block in results[-1]["content"])
    return text, bool(results[-1].get("isError"))


def slow_demo_world(base: Path, runtime: PiRuntime, chunk_delay: float) -> Iterator[MainPiWorld]:
    """A main Pi's world with the demo spec staged, on a scripted model that streams each chunk
    ``chunk_delay`` seconds apart, so the children are still at work when a terminal test acts."""
    with ScriptedModelServer("diligent", chunk_delay=chunk_delay) as model:
        world = MainPiWorld(base=base, runtime=runtime, model=model)
        world.write_models()
        world.stage_demo()
        yield world


def squad_starting_terminal(world: MainPiWorld) -> Terminal:
    """An interactive main Pi whose scripted model calls ``squad`` on the demo spec once."""
    digest = hashlib.sha256((world.project / "demo.spec.json").read_bytes()).hexdigest()
    arguments = {"specFile": "demo.spec.json", "specSha256": digest}
    markers = (
        f"scripted-policy: tool-once\nscripted-tool: squad\nscripted-args: {json.dumps(arguments)}"
    )
    argv = scripted_interactive_argv(world.runtime, markers)
    return Terminal(argv, world.environment(), world.project)
