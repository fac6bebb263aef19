"""Navigation on real Pi 0.80.10 (docs/delegation.md, "Navigation"): the shim forwards every
session-switching event to the main bridge without ever waiting for it, and in a main Pi that
delegated, ``/tree`` navigation cancels the running worker, whose late result is dropped.
Skipped without the project runtime."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from adapters.pi_runtime import PiRuntime, pi_environment
from adapters.scripted_model import ScriptedModelServer, write_models_json
from domain.delegation.navigation import TREE_REASON
from tests.e2e.delegation_world import Delegation, main_collect, main_pi_delegates
from tests.e2e.pi_rpc_client import PiRpcClient, Record
from tests.e2e.real_pi import EXTENSION, scripted_rpc_argv

pytestmark = pytest.mark.realpi
HERE = Path(__file__).resolve().parent
TREE_EXTENSION = HERE / "extensions" / "tree_navigation.ts"
FAKE_BRIDGE = HERE / "fake_bridge_recorder.py"


def _tree_navigated(record: Record) -> bool:
    return (
        record.get("type") == "extension_ui_request"
        and record.get("method") == "notify"
        and str(record.get("message", "")).startswith("nav-tree done")
    )


def _navigate_tree(client: PiRpcClient) -> None:
    """``/nav-tree`` (the test extension): the tree navigation a user's ``/tree`` makes."""
    client.skip()
    client.send({"type": "prompt", "message": "/nav-tree"})
    done = client.wait_for(_tree_navigated, timeout=60)[-1]
    assert done["message"] == "nav-tree done: cancelled=false", done


def test_the_shim_forwards_every_session_switch_without_waiting_for_the_bridge(
    tmp_path: Path, runtime: PiRuntime
) -> None:
    """A bridge that never answers ``navigation`` (and a 10-minute bridge timeout): every RPC
    navigation still completes, so the shim awaited none of them; the bridges a Pi starts for
    each session recorded each event with Pi's reason or position, then the shutdown."""
    record = tmp_path / "bridge-requests.jsonl"
    with ScriptedModelServer("echo") as model:
        agent = tmp_path / "agent"
        write_models_json(agent, model.base_url)
        env = pi_environment(os.environ, agent, runtime)
        env.pop("PI_SQUAD_CHILD", None)
        env.update(
            PI_SQUAD_ROOT=str(tmp_path / "root"),
            PI_SQUAD_BRIDGE=json.dumps([sys.executable, str(FAKE_BRIDGE)]),
            PI_SQUAD_BRIDGE_TIMEOUT_MS="600000",
            FAKE_BRIDGE_RECORD=str(record),
        )
        project = tmp_path / "project"
        project.mkdir()
        argv = scripted_rpc_argv(
            runtime,
            "-e",
            str(EXTENSION),
            "-e",
            str(TREE_EXTENSION),
            session=("--session-dir", str(tmp_path / "sessions")),
        )
        client = PiRpcClient(argv, env, project)
        try:
            client.prompt("first")
            first_file = client.command({"type": "get_state"})["sessionFile"]
            assert client.command({"type": "clone"}, timeout=60) == {"cancelled": False}
            [message, *_] = client.command({"type": "get_fork_messages"})["messages"]
            forked = client.command({"type": "fork", "entryId": message["entryId"]}, timeout=60)
            assert forked["cancelled"] is False
            assert client.command({"type": "new_session"}, timeout=60) == {"cancelled": False}
            client.prompt("second")
            _navigate_tree(client)
            switched = client.command({"type": "switch_session", "sessionPath": first_file}, 60)
            assert switched == {"cancelled": False}
        finally:
            client.close()
    requests = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    forwarded = [
        (r["method"], r["params"])
        for r in requests
        if r["method"] in ("navigation", "session_shutdown")
    ]
    assert forwarded == [
        ("navigation", {"event": "session_before_fork", "position": "at"}),
        ("session_shutdown", {"reason": "fork"}),
        ("navigation", {"event": "session_before_fork", "position": "before"}),
        ("session_shutdown", {"reason": "fork"}),
        ("navigation", {"event": "session_before_switch", "reason": "new"}),
        ("session_shutdown", {"reason": "new"}),
        ("navigation", {"event": "session_before_tree"}),
        ("navigation", {"event": "session_before_switch", "reason": "resume"}),
        ("session_shutdown", {"reason": "resume"}),
        ("session_shutdown", {"reason": "quit"}),
    ]


def test_tree_navigation_cancels_the_running_worker_and_drops_its_late_result(
    tmp_path: Path, runtime: PiRuntime
) -> None:
    """A main Pi that delegated a slow job navigates its tree: the job is cancelled with the
    tree's reason (its lease revoked, its worker killed); the bridge lives on, so the killed
    worker's report arrives and is dropped as late; the model hears nothing more from it."""
    with ScriptedModelServer("echo", chunk_delay=0.2) as model:
        world = Delegation(base=tmp_path, model=model)
        world.setup(maxRequests=30)
        client, batch_id = main_pi_delegates(
            world, runtime, "slow", max_requests=30, extensions=(str(TREE_EXTENSION),)
        )
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if any(e.policy == "worker" and e.reply.tool_calls for e in model.exchanges()):
                    break
                time.sleep(0.3)
            _navigate_tree(client)
            item: dict[str, Any] = {}
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                item = main_collect(world, batch_id, wait_ms=0)["items"][0]
                if item["receipt"]["observations"]["lateResultsDropped"]:
                    break
                time.sleep(0.3)
            calls = len(model.exchanges())
            time.sleep(1.0)
            assert len(model.exchanges()) == calls  # the worker is gone
        finally:
            client.close()
    receipt = item["receipt"]
    assert receipt["hostStatus"] == "cancelled"
    assert receipt["reason"] == f"task navigation: {TREE_REASON}"
    assert receipt["settlement"] == "settled"
    assert receipt["observations"]["lateResultsDropped"] == 1
    assert item["result"] is None
