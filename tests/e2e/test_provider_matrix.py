"""The provider matrix: every face of pi-squad on real Pi 0.80.10, once per wire protocol Pi
supports with a custom ``baseUrl`` (``openai-completions``, ``openai-responses``,
``anthropic-messages``, ``google-generative-ai``), each through Pi's own provider adapter to the
scripted model speaking that protocol, which refuses what the real API refuses and fills only
the tool fields the provider was shown. Each row runs a reasoning model at a set thinking level,
so thinking blocks go out and come back through the main session, children, flow roles and
workers; every model is priced, so Pi reports a cost.

A row: the demo squad started by the main Pi's ``squad`` tool and driven to review with every
attestation verified; a contracted ``flow`` chain under ``maxCostUsd`` that wraps up and then
stops on cost; a ``delegate`` job from the main Pi to ``ready``; the user's own ``bash`` and
``read`` in a main session with pi-squad loaded.
"""

from __future__ import annotations

import functools
import hashlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from adapters.pi_runtime import PiRuntime, pi_command
from adapters.scripted_model import ScriptedModelServer
from adapters.scripted_model.models_json import PROTOCOL_PROVIDERS, protocol_model
from adapters.scripted_model.policies import (
    IMPATIENT_AFTER_MARKER,
    IMPATIENT_BASH_MARKER,
    IMPATIENT_PARALLEL_MARKER,
    IMPATIENT_WRITE_MARKER,
)
from domain.squad.model import SquadStatus
from tests.e2e.delegation_world import Delegation, main_collected, main_pi_delegates
from tests.e2e.flow_runs import WHY, run_flow
from tests.e2e.main_pi import MainPiWorld
from tests.e2e.pi_rpc_client import PiRpcClient, Record
from tests.e2e.real_pi import EXTENSION, demo_world, run_argv
from tests.e2e.test_main_role_safety import text_of, tool_results
from tests.unit.domain.flows.test_contracts import contract

pytestmark = pytest.mark.realpi

APIS = tuple(PROTOCOL_PROVIDERS)
THINKING = "high"


def protocol_argv(runtime: PiRuntime, *extra: str, api: str) -> list[str]:
    """``pi --mode rpc`` on the reasoning model of ``api``, thinking ``THINKING``."""
    provider, model = protocol_model(api)
    return [
        *pi_command(runtime),
        "--mode",
        "rpc",
        "--no-session",
        "--provider",
        provider,
        "--model",
        model,
        "--thinking",
        THINKING,
        *extra,
    ]


def assert_thinking_went_both_ways(model: ScriptedModelServer, api: str) -> None:
    """Every answer on ``api`` streamed thinking, and every request that continued a turn sent
    the earlier thinking back (checked against its signature by the protocol)."""
    exchanges = [e for e in model.exchanges() if e.api == api]
    assert exchanges, f"no request reached the scripted {api} model"
    assert all(e.reply.thinking for e in exchanges), "a reasoning request got no thinking"
    continued = [e for e in exchanges if e.conversation is not None and e.conversation.rounds]
    assert continued, "no request continued a turn"
    assert all(e.conversation and e.conversation.thinking_returned for e in continued)


def assert_reported_cost(records: list[Record]) -> None:
    costs = [
        r["message"]["usage"]["cost"]["total"]
        for r in records
        if r.get("type") == "message_end" and r["message"].get("role") == "assistant"
    ]
    assert costs, "no assistant message"
    assert all(cost > 0 for cost in costs), costs


# -- the squad face ---------------------------------------------------------------------------


@attrs.define
class ProtocolPiWorld(MainPiWorld):
    api: str = "openai-completions"

    def environment(self) -> dict[str, str]:
        provider, model = protocol_model(self.api)
        env = super().environment()
        env.update(PI_SQUAD_PROVIDER=provider, PI_SQUAD_MODEL=model)
        return env

    def main_pi(self, session: tuple[str, ...] = ("--no-session",)) -> PiRpcClient:
        argv = protocol_argv(self.runtime, "-e", str(EXTENSION), api=self.api)
        return PiRpcClient(argv, self.environment(), self.project)


@pytest.fixture(params=APIS)
def world(request: pytest.FixtureRequest, tmp_path: Path, runtime: PiRuntime) -> Iterator[Any]:
    for world in demo_world(ProtocolPiWorld, tmp_path, runtime):
        world.api = request.param
        yield world


def test_the_main_pis_squad_tool_drives_the_demo_to_review_with_verified_reads(
    world: ProtocolPiWorld,
) -> None:
    digest = hashlib.sha256((world.project / "demo.spec.json").read_bytes()).hexdigest()
    arguments = {"specFile": "demo.spec.json", "specSha256": digest}
    client = world.main_pi()
    try:
        prompt = (
            "Start the squad.\nscripted-policy: tool-once\nscripted-tool: squad\n"
            f"scripted-args: {json.dumps(arguments)}"
        )
        records = client.prompt(prompt, timeout=90)
        results = tool_results(records)
        assert results, f"the squad tool never ran\n{world.main_model_calls()}"
        assert not results[-1].get("isError"), text_of(results[-1])
        assert "started with 4 tasks" in text_of(results[-1])
        assert_reported_cost(records)
        (squad_id,) = world.squads()
        snapshot = world.wait_for_status(squad_id, {SquadStatus.REVIEW, SquadStatus.FAILED})
    finally:
        client.close()
    assert snapshot.squad.status is SquadStatus.REVIEW
    verified = world.cli("verify", squad_id, "--json")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    report = json.loads(verified.stdout)
    assert {t["attestation"] for t in report["tasks"]} == {"valid"}
    evidence = world.cli("report", squad_id, "--format", "json")
    assert evidence.returncode == 0, evidence.stderr
    for task in json.loads(evidence.stdout)["tasks"]:
        read = task["attestation"]
        assert read["chunksCommitted"] == read["chunkCount"] > 0, read
        assert not read["missingIndices"], read
        assert task["usage"]["cost"] > 0, task["usage"]  # priced by the provider's usage
    spec_reads = [
        call
        for e in world.model.exchanges()
        if e.api == world.api
        for call in e.reply.tool_calls
        if call.name == "squad_spec_read"
    ]
    assert spec_reads, "the children read through squad_spec_read on this protocol"
    assert_thinking_went_both_ways(world.model, world.api)


def test_the_users_own_tools_answer_in_a_main_session_with_pi_squad_loaded(
    world: ProtocolPiWorld,
) -> None:
    (world.project / "notes.txt").write_text("MATRIX-READ-OK\n", encoding="utf-8")
    client = world.main_pi()
    try:
        ran = client.prompt(
            "Run it.\nscripted-policy: bash-once\nscripted-bash: echo MATRIX-BASH-OK", timeout=60
        )
        read = client.prompt(
            "Read it.\nscripted-policy: tool-once\nscripted-tool: read\n"
            'scripted-args: {"path": "notes.txt"}',
            timeout=60,
        )
    finally:
        client.close()
    (bash,) = tool_results(ran)
    assert (bash["toolName"], bash.get("isError")) == ("bash", False), bash
    assert "MATRIX-BASH-OK" in text_of(bash)
    (reading,) = tool_results(read)
    assert (reading["toolName"], reading.get("isError")) == ("read", False), reading
    assert "MATRIX-READ-OK" in text_of(reading)
    assert_reported_cost(ran)
    assert_thinking_went_both_ways(world.model, world.api)


# -- the flow face ----------------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
def test_a_contracted_chain_under_a_cost_budget_wraps_up_then_stops_on_cost(
    tmp_path: Path, runtime: PiRuntime, api: str
) -> None:
    """Step 1 returns a contracted envelope; step 2 works in ``bash`` calls until the wrap-up
    notice at 80% of ``maxCostUsd`` reaches it, and wraps up; the spend then crosses the
    ceiling (step 2's last answer or step 3's first, as the protocol's request sizes fall), and
    step 3 ends ``BUDGET_EXCEEDED`` on the cost Pi priced from the provider's usage, not on
    tokens (no token ceiling is set)."""
    provider, model = protocol_model(api)
    envelope = "scripted-policy: envelope\nscripted-envelope-data: " + json.dumps(
        {"answer": "s-42"}
    )
    call = {
        "task": "the provider matrix",
        "chain": [
            {"agent": "researcher", "task": f"{envelope}\nFind it.", "contract": contract()},
            {
                "agent": "researcher",
                "task": "Work until told to stop.\nscripted-policy: budget-looper",
                "tools": "bash",
            },
            {"agent": "researcher", "task": "Never runs."},
        ],
        "why": WHY,
        "thinking": THINKING,
        "maxCostUsd": COST_CEILING_USD,
    }
    with ScriptedModelServer("echo") as scripted:
        status, document = run_flow(
            tmp_path, call, model_server=scripted, provider=provider, model=model
        )
    assert status == 1, document
    first, second, third = document["results"]
    assert first["status"] == "completed", first
    assert first["envelope"]["data"] == {"answer": "s-42"}
    assert second["status"] == "completed", second
    assert second["output"].startswith("Wrapped up after "), second
    assert (third["status"], third["error"]["code"]) == ("failed", "BUDGET_EXCEEDED"), third
    assert "maxCostUsd reached" in third["error"]["message"]
    assert (document["error"]["code"], document["budget"]["exhausted"]) == (
        "BUDGET_EXCEEDED",
        ["flow"],
    )
    (flow_ceiling,) = [c for c in document["budget"]["ceilings"] if c["authority"] == "flow"]
    assert flow_ceiling["spent"]["costUsd"] >= COST_CEILING_USD
    assert all(run["usage"]["cost"] > 0 for run in (first, second))
    assert_thinking_went_both_ways(scripted, api)


COST_CEILING_USD = 0.02


# -- the delegation face ----------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
def test_the_main_pis_delegate_tool_runs_a_job_to_ready(
    tmp_path: Path, runtime: PiRuntime, api: str
) -> None:
    provider, model = protocol_model(api)
    with ScriptedModelServer("echo") as scripted:
        world = Delegation(base=tmp_path, model=scripted)
        world.setup()
        policy_file = tmp_path / "root" / "delegation" / "policy.json"
        policy = json.loads(policy_file.read_text())
        policy["model"] = {"provider": provider, "model": model}
        policy_file.write_text(json.dumps(policy))
        argv = functools.partial(protocol_argv, api=api)
        client, batch_id = main_pi_delegates(world, runtime, "valid", pi_argv=argv)
        try:
            items = main_collected(world, batch_id)
        finally:
            client.close()
        assert items, "the worker published its result"
        assert items[0]["receipt"]["hostStatus"] == "ready", items[0]
        assert items[0]["result"]["answer"] == "no sources"
        assert_thinking_went_both_ways(scripted, api)


# -- children that cheat ----------------------------------------------------------------------


@pytest.fixture(params=APIS)
def headless(
    request: pytest.FixtureRequest, tmp_path: Path, runtime: PiRuntime
) -> Iterator[ProtocolPiWorld]:
    for world in demo_world(ProtocolPiWorld, tmp_path, runtime):
        world.api = request.param
        yield world


def run_headless(world: ProtocolPiWorld, policy: str) -> dict[str, Any]:
    """``pi-squad run --json`` of the demo with every agent on ``policy``; its summary."""
    digest = world.stage_demo(policy)
    provider, model = protocol_model(world.api)
    argv = run_argv(world.project / "demo.spec.json", digest, world.project, "--json")
    argv[argv.index("--provider") + 1] = provider
    argv[argv.index("--model") + 1] = model
    env = {**world.pi_environment(), "PI_SQUAD_ROOT": str(world.root)}
    done = subprocess.run(
        argv, env=env, cwd=world.project, capture_output=True, text=True, timeout=300, check=False
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, done.stdout[-3000:] + done.stderr[-3000:]
    summary: dict[str, Any] = json.loads(lines[-1])
    return summary


def test_children_that_use_tools_before_reading_are_blocked_and_accepted_only_after(
    headless: ProtocolPiWorld,
) -> None:
    """``impatient`` children call ``bash``, ``read`` and ``write`` before reading, then beside
    their reads: every such call is blocked on every protocol; once every chunk is delivered
    their ``bash`` runs, and the squad reaches review with every attestation valid."""
    summary = run_headless(headless, "impatient")
    assert summary["status"] == "review", summary
    assert {task["attestation"] for task in summary["tasks"]} == {"valid"}, summary
    assert not (headless.project / IMPATIENT_BASH_MARKER).exists()
    assert not (headless.project / IMPATIENT_WRITE_MARKER).exists()
    assert not (headless.project / IMPATIENT_PARALLEL_MARKER).exists()
    assert (headless.project / IMPATIENT_AFTER_MARKER).exists()
    assert_thinking_went_both_ways(headless.model, headless.api)


def test_children_that_quit_without_reading_are_never_accepted(
    headless: ProtocolPiWorld,
) -> None:
    summary = run_headless(headless, "lazy")
    assert summary["status"] != "review", summary
    statuses = {task["taskId"]: task["status"] for task in summary["tasks"]}
    assert "done" not in statuses.values(), summary
    assert statuses["design"] == "suspended", summary
    verified = json.loads(headless.cli("verify", summary["squadId"], "--json").stdout)
    assert {task["attestation"] for task in verified["tasks"]} == {"missing"}, verified
    assert verified["squad"]["status"] != "review"
