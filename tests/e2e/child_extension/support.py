"""A published squad whose child real Pi runs with the pi-squad package loaded (``Squad``), the
launcher of those runs, what a run's events say, and a stand-in bridge that fails on demand."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import attrs

from adapters.pi_runtime import PiRuntime, pi_environment
from adapters.scripted_model import ScriptedModelServer, write_models_json
from application.ledger_files import ATTESTATION_FILE, STATE_FILE
from application.squads.create_squad import PublishedSquad
from domain.attestation import validate_attestation_bytes
from domain.attestation.binding import SpecBinding
from domain.chunks import ChunkTable
from tests.e2e.pi_rpc_client import PiRpcClient, Record
from tests.e2e.real_pi import EXTENSION, scripted_rpc_argv
from tests.squads import child_environment, multi_chunk_spec

BRIDGE_ARGV = [sys.executable, "-m", "entrypoints.cli", "bridge"]
SPEC = multi_chunk_spec(5)
TABLE = ChunkTable.of(SPEC)
COUNT = TABLE.chunk_count
TASK = "build"
SECRET = "the-read-marker-content-must-never-reach-the-model"


@attrs.frozen
class Squad:
    published: PublishedSquad
    workdir: Path

    @property
    def task_dir(self) -> Path:
        return Path(self.published.squad_dir, TASK)

    def attestation_bytes(self) -> bytes:
        return (self.task_dir / ATTESTATION_FILE).read_bytes()

    def attestation_valid(self) -> bool:
        binding = SpecBinding.of(TABLE, squad_id=self.published.squad.id, task_id=TASK)
        return validate_attestation_bytes(self.attestation_bytes(), binding, TABLE).valid

    def committed(self) -> set[int]:
        state = self.task_dir / STATE_FILE
        if not state.exists():
            return set()
        chunks = json.loads(state.read_bytes())["deliveries"]
        return {chunk["index"] for chunk in chunks}

    def environment(self) -> dict[str, str]:
        return dict(child_environment(self.published, TASK))


class PiRun(NamedTuple):
    """One prompt's records, the Pi that answered it and the model server it talked to."""

    records: list[Record]
    pi: PiRpcClient
    server: ScriptedModelServer


@attrs.define
class Launcher:
    runtime: PiRuntime
    base: Path
    started: list[PiRpcClient] = attrs.Factory(list)

    def start(
        self,
        server: ScriptedModelServer,
        policy: str,
        environment: Mapping[str, str],
        cwd: Path,
        *extra: str,
        session: Sequence[str] = ("--no-session",),
        bridge: Sequence[str] = BRIDGE_ARGV,
        prompt_lines: Sequence[str] = (),
    ) -> PiRpcClient:
        agent_dir = self.base / "agent"
        write_models_json(agent_dir, server.base_url)
        appended = self.base / f"prompt-{len(self.started)}.md"
        appended.write_text(
            "\n".join(["You are an agent.", *prompt_lines, f"scripted-policy: {policy}", ""])
        )
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("PI_SQUAD_")}
        env = pi_environment(inherited, agent_dir, self.runtime)
        env.update(environment)
        env["PI_SQUAD_BRIDGE"] = json.dumps(list(bridge))
        argv = scripted_rpc_argv(
            self.runtime,
            "--no-extensions",
            "-e",
            str(EXTENSION),
            "--append-system-prompt",
            str(appended),
            *extra,
            session=session,
        )
        client = PiRpcClient(argv, env, cwd)
        self.started.append(client)
        return client

    def run(
        self,
        policy: str,
        environment: Mapping[str, str],
        cwd: Path,
        *extra: str,
        message: str = "Work on your task.",
        bridge: Sequence[str] = BRIDGE_ARGV,
        prompt_lines: Sequence[str] = (),
    ) -> PiRun:
        """Pi on a fresh ``echo`` model server, prompted once with ``message``, closed cleanly."""
        with ScriptedModelServer("echo") as server:
            pi = self.start(
                server, policy, environment, cwd, *extra, bridge=bridge, prompt_lines=prompt_lines
            )
            records = pi.prompt(message)
            assert pi.close() == 0
        return PiRun(records, pi, server)


def tool_ends(records: list[Record]) -> list[Record]:
    return [r for r in records if r.get("type") == "tool_execution_end"]


def assistant_calls(records: list[Record]) -> list[list[tuple[str, Any]]]:
    """Per assistant message: (tool name, arguments) of each tool call."""
    return [
        [(b["name"], b["arguments"]) for b in r["message"]["content"] if b["type"] == "toolCall"]
        for r in records
        if r.get("type") == "message_end" and r["message"]["role"] == "assistant"
    ]


def final_text(records: list[Record]) -> str:
    last = [
        r["message"]
        for r in records
        if r.get("type") == "message_end" and r["message"]["role"] == "assistant"
    ][-1]
    return "".join(b["text"] for b in last["content"] if b["type"] == "text")


def offered_tools(server: ScriptedModelServer) -> list[list[str]]:
    return [
        sorted(t["function"]["name"] for t in exchange.request.get("tools", []))
        for exchange in server.exchanges()
    ]


def no_extension_errors(records: list[Record], client: PiRpcClient) -> None:
    errors = [r for r in records if r.get("type") == "extension_error"]
    assert not errors, f"{errors}\n{client.stderr()}"


def assert_no_bridge_left(squad: Squad, timeout: float = 5.0) -> None:
    """No process still carries this squad's spec path in its environment (Linux only)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return
    needle = f"PI_SQUAD_SPEC_PATH={squad.published.squad.spec.path}".encode()  # type: ignore[union-attr]
    deadline = time.monotonic() + timeout
    while True:
        alive = []
        for entry in proc.iterdir():
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                try:
                    if needle in (entry / "environ").read_bytes():
                        alive.append(entry.name)
                except OSError:
                    continue
        if not alive or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert not alive, f"processes of the killed child still running: {alive}"


FAKE_BRIDGE = r"""
import json, sys
mode = sys.argv[1]

def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()

def ok(request_id, result):
    send({"v": 1, "id": request_id, "ok": True, "result": result})

reader = {"name": "squad_spec_read", "label": "Read", "description": "Read a chunk.",
          "parameters": {"type": "object", "additionalProperties": False, "required": ["index"],
                         "properties": {"index": {"type": "integer", "minimum": 0}}}}
registrations = {"tools": [reader] if mode == "refuse-execute" else [], "guard": True,
                 "messageEnd": False, "bootstrap": False, "lifecycle": True}
for line in sys.stdin.buffer:
    request = json.loads(line)
    method, request_id = request["method"], request["id"]
    if method == "hello":
        ok(request_id, {"role": "child-spec", "registrations": registrations})
    elif method == "session_start":
        if mode == "notify":  # before the answer: the shim delivers it during session_start
            send({"v": 1, "event": "send_message", "data": {
                "message": {"customType": "pi-squad", "content": "squad-note: task 7 is done",
                            "display": True},
                "options": {"deliverAs": "nextTurn"}}})
        ok(request_id, None)
    elif method == "tool_call" and mode == "die":
        sys.exit(3)
    elif method == "tool_call" and mode == "hang":
        continue
    elif method == "tool_call" and mode == "garbage":
        sys.stdout.write("this is not a protocol line\n")
        sys.stdout.flush()
    elif method == "tool_call" and mode == "bad-reply":
        ok(request_id, {"blocked": False})
    elif method == "tool_call":
        ok(request_id, {"block": False})
    elif method == "execute_tool":
        send({"v": 1, "id": request_id, "ok": False,
              "error": {"code": "tool_failed", "message": "scripted refusal of chunk 0"}})
    else:
        ok(request_id, None)
"""
BASH_MARKER = "BRIDGE_FAILURE_MARKER"


def fake_bridge(tmp_path: Path, mode: str) -> list[str]:
    script = tmp_path / "fake_bridge.py"
    script.write_text(FAKE_BRIDGE)
    return [sys.executable, str(script), mode]


def bash_attempt(
    launcher: Launcher, squad: Squad, bridge: Sequence[str], environment: Mapping[str, str]
) -> tuple[Record, PiRpcClient]:
    """One scripted ``bash`` call that would create a marker; returns its execution end."""
    records, pi, _ = launcher.run(
        "bash-once",
        environment,
        squad.workdir,
        message="Run the command.",
        bridge=bridge,
        prompt_lines=[f"scripted-bash: touch {BASH_MARKER}"],
    )
    (end,) = tool_ends(records)
    assert end["toolName"] == "bash"
    assert not (squad.workdir / BASH_MARKER).exists()
    return end, pi
