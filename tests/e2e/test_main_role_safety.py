"""Issue 13 item 1 with real Pi 0.80.10: a main Pi whose bridge cannot start keeps every one of
the user's own tools and shows the error with its remedy at session start; the package finds its
bridge from its own install, not from ``PATH``; a child Pi whose bridge cannot start still blocks
everything (fail closed)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.pi_runtime import PiRuntime, pi_command, pi_environment
from adapters.scripted_model import ScriptedModelServer, write_models_json
from tests.e2e.pi_rpc_client import PiRpcClient, Record
from tests.pi_runtime_support import installed_pi_runtime

pytestmark = pytest.mark.realpi

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "entrypoints" / "pi"
MISSING_BRIDGE = json.dumps(["/nonexistent/pi-squad-missing", "bridge"])


@pytest.fixture
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer("bash-once") as server:
        yield server


def start_pi(
    tmp_path: Path,
    runtime: PiRuntime,
    model: ScriptedModelServer,
    *,
    bridge: str | None,
    child: bool = False,
) -> PiRpcClient:
    agent = tmp_path / "agent"
    write_models_json(agent, model.base_url)
    env = pi_environment(os.environ, agent, runtime)
    env["PI_SQUAD_ROOT"] = str(tmp_path / "root")
    for name in ("PI_SQUAD_BRIDGE", "PI_SQUAD_CHILD", "VIRTUAL_ENV"):
        env.pop(name, None)
    if bridge is not None:
        env["PI_SQUAD_BRIDGE"] = bridge
    if child:
        env["PI_SQUAD_CHILD"] = "1"
    # Nothing named pi-squad on PATH: only Node's directory and the system's.
    env["PATH"] = os.pathsep.join([str(Path(runtime.node_path).parent), "/usr/bin", "/bin"])
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    argv = [
        *pi_command(runtime),
        "--mode",
        "rpc",
        "--no-session",
        "--provider",
        "fake",
        "--model",
        "fake-model",
        "-e",
        str(EXTENSION),
    ]
    return PiRpcClient(argv, env, project)


def is_error_notice(record: Record) -> bool:
    return (
        record.get("type") == "extension_ui_request"
        and record.get("method") == "notify"
        and record.get("notifyType") == "error"
    )


def tool_results(records: list[Record]) -> list[Record]:
    return [
        r["message"]
        for r in records
        if r.get("type") == "message_end" and r["message"].get("role") == "toolResult"
    ]


def text_of(message: Record) -> str:
    return "".join(block.get("text", "") for block in message["content"])


def test_main_pi_without_a_bridge_keeps_bash_and_shows_the_error_with_its_remedy(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    client = start_pi(tmp_path, installed_pi_runtime(), model, bridge=MISSING_BRIDGE)
    try:
        records = client.prompt("Say hi.\nscripted-bash: echo still-mine", timeout=60)
        (result,) = tool_results(records)
        assert result["toolName"] == "bash"
        assert not result.get("isError"), result
        assert "still-mine" in text_of(result)

        notice = client.find(is_error_notice, timeout=10)
        message = notice["message"]
        assert "pi-squad is unavailable" in message
        assert "/nonexistent/pi-squad-missing" in message, "names what failed"
        assert "PI_SQUAD_BRIDGE" in message, "says what to correct"
        assert "pi-squad doctor" in message, "says what to run"
        assert "Your own tools work as usual" in message
    finally:
        client.close()


def test_main_pi_finds_the_bridge_beside_its_install_without_pi_squad_on_path(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    assert (REPO / ".venv" / "bin" / "pi-squad").exists(), "the checkout's own environment"
    client = start_pi(tmp_path, installed_pi_runtime(), model, bridge=None)
    try:
        prompt = (
            "Status.\nscripted-policy: tool-once\nscripted-tool: squad_status\nscripted-args: {}"
        )
        records = client.prompt(prompt, timeout=60)
        (result,) = tool_results(records)
        assert result["toolName"] == "squad_status"
        # The bridge itself answered (an empty root has no squad), not the shim's failure path.
        assert text_of(result) == "No squad found.", text_of(result)
        assert not [r for r in client.records if is_error_notice(r)]
    finally:
        client.close()


def test_child_pi_without_a_bridge_blocks_every_tool(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    client = start_pi(tmp_path, installed_pi_runtime(), model, bridge=MISSING_BRIDGE, child=True)
    try:
        records = client.prompt("Say hi.\nscripted-bash: echo escaped", timeout=60)
        (result,) = tool_results(records)
        assert result["toolName"] == "bash"
        assert result.get("isError"), result
        assert "pi-squad bridge failure" in text_of(result)
        assert "escaped" not in text_of(result)
    finally:
        client.close()


def test_squad_typed_while_the_bridge_is_broken_answers_locally_with_the_error(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    """Issue 31: ``/squad`` stays registered and answers with the bridge's error; it used to be
    sent to the model as a prompt."""
    client = start_pi(tmp_path, installed_pi_runtime(), model, bridge=MISSING_BRIDGE)
    try:
        commands = client.command({"type": "get_commands"})["commands"]
        assert "squad" in {command["name"] for command in commands}
        client.find(is_error_notice, timeout=30)  # the session start's notice
        client.command({"type": "prompt", "message": "/squad status"})
        notices = [r for r in client.records if is_error_notice(r)]
        deadline = time.monotonic() + 10
        while len(notices) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
            notices = [r for r in client.records if is_error_notice(r)]
        assert len(notices) == 2, "the session start's notice, then the answer to /squad"
        assert "pi-squad is unavailable" in notices[1]["message"]
        assert "/nonexistent/pi-squad-missing" in notices[1]["message"]
        assert model.requests_received() == 0, "/squad never reached the model"
    finally:
        client.close()
