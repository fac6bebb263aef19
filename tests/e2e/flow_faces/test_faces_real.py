"""The faces of flows in a real Pi 0.80.10 (docs/flows.md, "Faces inside Pi"): a main Pi in RPC
mode with the package loaded calls ``flow`` through the scripted model, its children real Pi
processes. The call's result carries the card, the card is a custom entry of the session file
and a resumed interactive Pi draws it again; an RPC ``abort`` of a running flow, and Esc in an
interactive Pi, end it ``cancelled`` with its child killed; a project agent is approved through
the RPC UI protocol."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from adapters.pi_runtime import pi_command
from tests.e2e.flow_faces.support import (
    CARD,
    WHY,
    FacesWorld,
    children_of,
    flow_prompt,
    flow_terminal,
    is_flow_end,
    result_text,
    wait_for_the_childs_command,
    wait_until_no_child_is_left,
)
from tests.e2e.pi_rpc_client import PiRpcClient
from tests.e2e.real_pi import EXTENSION, scripted_rpc_argv
from tests.e2e.terminal import Terminal

pytestmark = pytest.mark.realpi

SLEEP = "sleep 7771"


def test_a_flow_call_carries_its_card_which_a_resumed_session_draws_again(
    world: FacesWorld,
) -> None:
    tasks = [
        {"agent": "researcher", "task": f"scripted-policy: echo\nCARD-{name}"} for name in "AB"
    ]
    arguments = {
        "tasks": tasks,
        "why": WHY,
        "tools": "read,grep,find,ls",
        "concurrency": 2,
        "tier": "capable",
    }
    client = world.main_pi()
    try:
        client.skip()
        client.send(flow_prompt(arguments))
        records = client.wait_for(lambda r: r.get("type") == "agent_settled", timeout=120)
    finally:
        client.close()
    (end,) = [r for r in records if is_flow_end(r)]
    assert not end["isError"], result_text(end)
    entry = end["result"]["details"]["entry"]
    assert entry["customType"] == CARD
    card = entry["data"]
    assert (card["mode"], card["status"], card["outcome"]) == ("parallel", "completed", "2 ok")
    assert [run["agent"] for run in card["runs"]] == ["researcher", "researcher"]
    assert all(run["tokensOut"] > 0 and run["durationMs"] > 0 for run in card["runs"])
    assert card["lines"][0] == "flow parallel — completed: 2 ok"
    appended = [r["entry"] for r in records if r.get("type") == "entry_appended"]
    assert [(e["customType"], e["data"]) for e in appended] == [(CARD, card)]

    # Durable: the card is a custom entry of the session file, outside the model's context.
    (session_file,) = world.sessions.rglob("*.jsonl")
    stored = [json.loads(line) for line in session_file.read_text().splitlines()]
    customs = [e for e in stored if e.get("type") == "custom" and e.get("customType") == CARD]
    assert [e["data"] for e in customs] == [card]

    # A resumed interactive Pi draws it again from the session file, with the extension's
    # renderer (the header line, then one line per run).
    argv = [*pi_command(world.runtime), "--session", str(session_file), "-e", str(EXTENSION)]
    argv += ["--provider", "fake", "--model", "fake-model"]
    terminal = Terminal(argv, world.environment(), world.project)
    try:
        screen = terminal.wait_for("flow parallel — completed: 2 ok", timeout=60)
        assert "✓ task-0 (researcher) completed" in screen
        assert "✓ task-1 (researcher) completed" in screen
    finally:
        terminal.close()


def test_a_flow_past_the_tool_call_horizon_continues_detached_and_draws_its_card_when_done(
    world: FacesWorld,
) -> None:
    chain = [{"agent": "researcher", "task": f"scripted-policy: echo\nSTEP-{n}"} for n in range(3)]
    arguments = {"task": "Three steps.", "chain": chain, "why": WHY, "tier": "capable"}
    # The shim's answer bound cut to 3 s: the flow (three real Pi children in turn) outlives it.
    environment = world.environment() | {"PI_SQUAD_BRIDGE_EXECUTE_TIMEOUT_MS": "3000"}
    argv = scripted_rpc_argv(
        world.runtime, "-e", str(EXTENSION), session=("--session-dir", str(world.sessions))
    )
    client = PiRpcClient(argv, environment, world.project)
    try:
        client.skip()
        client.send(flow_prompt(arguments))
        (end,) = [r for r in client.wait_for(is_flow_end, timeout=60) if is_flow_end(r)]
        assert "continues detached" in result_text(end)
        assert end["result"]["details"]["detached"] is True

        def is_card(record: dict[str, Any]) -> bool:
            entry = record.get("entry") or {}
            return record.get("type") == "entry_appended" and entry.get("customType") == CARD

        appended = client.find(is_card, timeout=180)["entry"]
    finally:
        client.close()
    card = appended["data"]
    assert (card["mode"], card["status"]) == ("chain", "completed")
    assert [run["agent"] for run in card["runs"]] == ["researcher"] * 3


def test_an_rpc_abort_cancels_a_running_flow_and_kills_its_child(world: FacesWorld) -> None:
    task = f"scripted-policy: bash-once\nscripted-bash: {SLEEP}"
    arguments = {"agent": "researcher", "task": task, "why": WHY, "tools": "read,bash"}
    client = world.main_pi()
    try:
        client.skip()
        client.send(flow_prompt(arguments))
        client.wait_for(
            lambda r: (
                r.get("type") == "tool_execution_update"
                and "running — tool bash" in result_text({"result": r["partialResult"]})
            ),
            timeout=120,
        )
        wait_for_the_childs_command(world, SLEEP)
        assert len(children_of(world)) >= 2, children_of(world)  # the child Pi, its bash command
        client.command({"type": "abort"})
        end = client.find(is_flow_end, timeout=60)
    finally:
        client.close()
    card = end["result"]["details"]["entry"]["data"]
    assert card["status"] == "cancelled"
    (run,) = card["runs"]
    assert (run["status"], run["error"]["code"]) == ("failed", "CHILD_ABORTED")
    assert result_text(end).startswith("Flow single cancelled: 0/1 runs completed")
    wait_until_no_child_is_left(world)


def test_esc_in_the_terminal_cancels_a_running_flow_and_its_card_says_so(
    world: FacesWorld,
) -> None:
    task = f"scripted-policy: bash-once\nscripted-bash: {SLEEP}"
    arguments = {"agent": "researcher", "task": task, "why": WHY, "tools": "read,bash"}
    terminal = flow_terminal(world, arguments)
    try:
        terminal.type("Run the flow.\r")
        terminal.wait_for("running — tool bash", timeout=120)
        wait_for_the_childs_command(world, SLEEP)
        terminal.type("\x1b")
        screen = terminal.wait_for("flow single — cancelled", timeout=60)
        assert "✗ single (researcher) failed CHILD_ABORTED" in screen
    finally:
        terminal.close()
    wait_until_no_child_is_left(world)


def test_a_project_agent_is_approved_through_the_rpc_ui_before_it_runs(
    world: FacesWorld,
) -> None:
    agents = world.agents
    agents.mkdir(parents=True)
    definition: dict[str, object] = {"name": "local", "role": "Local", "tools": ["read"]}
    definition.update(description="a project agent", prompt="You are local.\nscripted-policy: echo")
    (agents / "local.json").write_text(json.dumps(definition), encoding="utf-8")
    arguments = {"agent": "local", "task": "LOCAL-1", "why": WHY, "agentScope": "project"}
    client = world.main_pi()
    try:
        client.skip()
        client.send(flow_prompt(arguments))
        asked = client.find(
            lambda r: r.get("type") == "extension_ui_request" and r.get("method") == "confirm",
            timeout=120,
        )
        assert "agent 'local' (" in asked["message"]
        client.send({"type": "extension_ui_response", "id": asked["id"], "confirmed": True})
        end = client.find(is_flow_end, timeout=120)
    finally:
        client.close()
    assert not end["isError"], result_text(end)
    assert end["result"]["details"]["entry"]["data"]["status"] == "completed"
    assert "LOCAL-1" in result_text(end)
    assert os.environ.get("PI_SQUAD_CHILD") != "1"
