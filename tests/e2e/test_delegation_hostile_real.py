"""Hostile delegated workers on real Pi 0.80.10 and the scripted model's ``worker`` policy
(issue 30; docs/delegation.md, "Workers on real Pi"): the request limit and the output ceiling
hold against the workers that once broke them, and the scripted model server, counting every
request it received, never receives one the host did not admit. Skipped without the project
runtime."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from adapters.pi_runtime import PiRuntime
from adapters.scripted_model import ScriptedModelServer
from tests.e2e.child_extension.support import Launcher
from tests.e2e.delegation_world import Delegation, delegation_world  # noqa: F401 - the fixture
from tests.e2e.pi_rpc_client import PiRpcClient

pytestmark = pytest.mark.realpi

# From its start to its settlement (the receipt's ``timing.elapsedMs``) the worker is killed
# within Pi's start, its turns and the kill grace (SIGTERM, then SIGKILL after 3 s): half the
# 120 s deadline the job is given. Most of it is Pi's own: it re-parses a streamed tool call's
# whole arguments at every piece before it emits the update, which no reader of its stream can
# cut short (the scripted model streams a 200 KB argument in at most 512 pieces, as
# adapters/scripted_model/sse.py says; in 16-byte pieces it took 5 s idle, 45 s loaded).
STOP_BOUND_MS = 60_000


def stopped_in_time(delegation: Delegation, behaviour: str, **limits: int) -> dict[str, Any]:
    """The receipt of one ``behaviour`` job run to its end, checked to have ended inside the
    bound, ``hostStatus`` what the stop makes it."""
    receipt: dict[str, Any] = delegation.run_to_end(behaviour, **limits)["receipt"]
    assert receipt["timing"]["elapsedMs"] < STOP_BOUND_MS, receipt["timing"]
    return receipt


def test_a_bash_only_worker_is_stopped_at_max_requests_and_every_request_counted(
    delegation: Delegation,
) -> None:
    receipt = stopped_in_time(delegation, "bash-only", maxRequests=2)
    assert (receipt["hostStatus"], receipt["problem"]) == (
        "failed",
        "the model-request limit is reached",
    )
    assert receipt["observations"]["failure"]["kind"] == "request_limit"
    # The refused third request never left the worker (its admission stopped it first): the
    # server received the two admitted ones. The receipt, on the parent's count, has every
    # request that reached the provider and the refused one too.
    assert delegation.model.requests_received() == 2
    assert receipt["usage"]["requests"] == 3
    assert all(not o["allowed"] for o in receipt["observations"]["toolOutcomes"])


def test_a_context_overflow_sends_no_compaction_nor_any_unadmitted_request(
    delegation: Delegation,
) -> None:
    # One tool turn, then the model answers "exceeds the context window". The person's own Pi
    # compacts eagerly; had the worker kept that setting, Pi would now send a summarisation
    # request (which no admission hook sees: Pi sends it outside its agent loop) and a retry.
    eager = {"compaction": {"enabled": True, "keepRecentTokens": 1}}
    (delegation.base / "agent" / "settings.json").write_text(json.dumps(eager))
    receipt = stopped_in_time(delegation, "context-overflow", maxRequests=6)
    # Both requests received were admitted and are on the receipt; nothing else arrived.
    assert delegation.model.requests_received() == 2
    assert receipt["usage"]["requests"] == 2
    assert receipt["observations"]["providerRetries"] == 0
    # The overflow ends the attempt, with the provider's words.
    assert receipt["observations"]["failure"]["kind"] == "provider_error"
    assert "exceeds the context window" in receipt["observations"]["failure"]["errorMessage"]


def test_a_200_kb_tool_argument_is_stopped_at_the_ceiling_within_a_bound(
    delegation: Delegation,
) -> None:
    receipt = stopped_in_time(delegation, "huge-argument", maxOutputBytes=4096)
    assert (receipt["hostStatus"], receipt["responseLimits"]["overflow"]) == ("invalid", True)
    # Measured as the argument grew (391-byte pieces): stopped at the piece that crossed.
    received = receipt["responseLimits"]["rawBytesReceived"]
    assert 4096 < received < 4096 + 1024
    assert receipt["observations"]["toolOutcomes"] == []  # the call never ran


# A worker's bridge that registers only the admission hook and answers it as ``mode`` says.
ADMITTING_BRIDGE = r"""
import json, sys
mode = sys.argv[1]
registrations = {"tools": [], "guard": False, "messageEnd": False, "bootstrap": False,
                 "lifecycle": False, "providerRequest": True}
for line in sys.stdin.buffer:
    request = json.loads(line)
    method, request_id = request["method"], request["id"]
    answer = {"v": 1, "id": request_id, "ok": True, "result": None}
    if method == "hello":
        if mode == "no-hello":
            sys.exit(3)
        answer["result"] = {"role": "child-worker", "registrations": registrations}
    elif method == "provider_request":
        if mode == "exit":
            sys.exit(3)
        if mode == "hang":
            continue
        if mode == "error":
            answer = {"v": 1, "id": request_id, "ok": False,
                      "error": {"code": "internal", "message": "the store is gone"}}
        elif mode == "malformed":
            answer["result"] = {"admitted": True}
        else:
            answer["result"] = {"admit": mode == "admit"}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
"""


def prompted_worker(
    runtime: PiRuntime, tmp_path: Path, mode: str
) -> tuple[ScriptedModelServer, PiRpcClient]:
    """Real Pi with the shim over ``ADMITTING_BRIDGE`` in ``mode``, prompted once."""
    script = tmp_path / "admitting_bridge.py"
    script.write_text(ADMITTING_BRIDGE)
    launcher = Launcher(runtime=runtime, base=tmp_path)
    server = ScriptedModelServer("echo").start()
    environment = {
        "PI_SQUAD_CHILD": "1",
        "PI_SQUAD_DELEGATION_WORKER": "1",
        "PI_SQUAD_BRIDGE_TIMEOUT_MS": "400",
    }
    pi = launcher.start(
        server, "echo", environment, tmp_path, bridge=[sys.executable, str(script), mode]
    )
    pi.send({"type": "prompt", "message": "hello"})
    return server, pi


def test_an_admitted_request_leaves_unchanged(runtime: PiRuntime, tmp_path: Path) -> None:
    server, pi = prompted_worker(runtime, tmp_path, "admit")
    try:
        pi.find(lambda r: r.get("type") == "agent_settled")
        assert server.requests_received() == 1
        (exchange,) = server.exchanges()
        assert "hello" in json.dumps(exchange.request["messages"])
        assert pi.close() == 0
    finally:
        server.stop()


@pytest.mark.parametrize("mode", ["refuse", "error", "malformed", "hang", "exit", "no-hello"])
def test_a_refused_or_unanswered_admission_kills_the_worker_before_the_request_leaves(
    runtime: PiRuntime, tmp_path: Path, mode: str
) -> None:
    server, pi = prompted_worker(runtime, tmp_path, mode)
    try:
        assert pi.process.wait(timeout=60) == -signal.SIGKILL, pi.stderr()
        assert server.requests_received() == 0
        assert "provider_request" in pi.stderr()
    finally:
        pi.close()
        server.stop()
