"""Delegated workers on real Pi 0.80.10 and the scripted model's ``worker`` policy
(docs/delegation.md, "Workers on real Pi"): ``pi-squad delegate capture``, ``run``, ``work`` and
``collect`` as separate processes, so every collect is a fresh host (a restart) reading the
durable session. Skipped without the project runtime."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest

from adapters.pi_runtime import PiRuntime
from adapters.scripted_model import ScriptedModelServer, write_models_json
from adapters.scripted_model.models_json import MODEL_ID, PROVIDER
from tests.e2e.real_pi import CLI, CLI_TIMEOUT_SECONDS

pytestmark = pytest.mark.realpi
SOURCE = "def add(a, b):\n    return a - b  # the defect\n\nprint(add(1, 2))\n"


@attrs.define
class Delegation:
    base: Path
    model: ScriptedModelServer

    @property
    def project(self) -> Path:
        return self.base / "project"

    def env(self) -> dict[str, str]:
        environ = {
            k: v
            for k, v in os.environ.items()
            if k not in {"PI_SQUAD_ROOT", "PI_CODING_AGENT_DIR", "PI_SQUAD_CHILD"}
        }
        environ.update(
            PI_SQUAD_ROOT=str(self.base / "root"),
            PI_CODING_AGENT_DIR=str(self.base / "agent"),
            HOME=str(self.base / "home"),
        )
        return environ

    def setup(self, **job: int) -> None:
        (self.project / "src").mkdir(parents=True)
        (self.project / "src" / "add.py").write_text(SOURCE, encoding="utf-8")
        write_models_json(self.base / "agent", self.model.base_url)
        policy = {"version": 1, "model": {"provider": PROVIDER, "model": MODEL_ID}}
        if job:
            policy["job"] = job
        (self.base / "root" / "delegation").mkdir(parents=True)
        (self.base / "root" / "delegation" / "policy.json").write_text(json.dumps(policy))

    def argv(self, op: str) -> list[str]:
        return [
            *CLI,
            "delegate",
            op,
            "--session",
            "s1",
            "--cwd",
            str(self.project),
            "--grant-root",
            str(self.project / "src"),
            "--json",
        ]

    def cli(self, op: str, request: dict[str, Any] | None = None) -> dict[str, Any]:
        argv = self.argv(op)
        if request is not None:
            argv += ["--request", "-"]
        done = subprocess.run(
            argv,
            input=json.dumps(request) if request is not None else None,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT_SECONDS,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        outcome: dict[str, Any] = json.loads(done.stdout)
        return outcome

    def work(self) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.argv("work"),
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def capture(self) -> str:
        outcome = self.cli("capture", {"version": 1, "op": "capture", "paths": ["src/add.py"]})
        source_id: str = outcome["sources"][0]["sourceId"]
        return source_id

    def observe(self, source_id: str) -> str:
        """A parent observation bound to ``source_id``; its receipt ID."""
        observation = {
            "origin": "parent ran the tests",
            "result": "2 passed",
            "sourceIds": [source_id],
        }
        outcome = self.cli(
            "capture", {"version": 1, "op": "capture", "parentObservations": [observation]}
        )
        receipt_id: str = outcome["receipts"][0]["receiptId"]
        return receipt_id

    def run(self, behaviour: str, source_id: str, **limits: int) -> dict[str, Any]:
        return self.run_granted(behaviour, source_id, (), limits)

    def run_granted(
        self,
        behaviour: str,
        source_id: str,
        receipt_ids: tuple[str, ...],
        limits: dict[str, int] | None = None,
    ) -> dict[str, Any]:
        """``run`` with evidence receipts granted to the job beside its source."""
        limits = limits or {}
        question = f"Is add() correct?\nworker-behaviour: {behaviour}\n"
        request = {
            "version": 1,
            "op": "run",
            "objective": "review add()",
            "requirements": [{"id": "R1", "text": "say whether add() adds"}],
            "jobs": [
                {
                    "key": "k1",
                    "mode": "review",
                    "question": question,
                    "requirements": ["R1"],
                    "sourceIds": [source_id],
                    **({"receiptIds": list(receipt_ids)} if receipt_ids else {}),
                    "acceptance": "a cited answer",
                    "reason": "an independent look",
                }
            ],
            "limits": {"maxRequests": 6, "deadlineMs": 120_000, **limits},
        }
        job: dict[str, Any] = self.cli("run", request)["jobs"][0]
        return job

    def collect(self, batch_id: str, **extra: Any) -> dict[str, Any]:
        return self.cli("collect", {"version": 1, "op": "collect", "batchId": batch_id, **extra})

    def run_to_end(self, behaviour: str, **limits: int) -> dict[str, Any]:
        """One job run by ``delegate work`` to its end; its collected item."""
        job = self.run(behaviour, self.capture(), **limits)
        worker = self.work()
        out, err = worker.communicate(timeout=CLI_TIMEOUT_SECONDS)
        assert worker.returncode == 0, out + err
        item: dict[str, Any] = self.collect(job["batchId"])["items"][0]
        return item


@pytest.fixture
def delegation(tmp_path: Path, runtime: PiRuntime) -> Any:
    with ScriptedModelServer("worker") as model:
        world = Delegation(base=tmp_path, model=model)
        world.setup()
        yield world


def test_a_review_job_returns_a_valid_result_with_evidence_ids(delegation: Delegation) -> None:
    item = delegation.run_to_end("valid")
    receipt, result = item["receipt"], item["result"]
    assert receipt["hostStatus"] == "ready", receipt
    assert receipt["settlement"] == "settled"
    assert result["evidence"][0]["evidenceId"] == "E1"
    assert result["evidence"][0]["quotation"] == "def add(a, b):"
    assert result["coverage"][0]["evidenceIds"] == ["E1"]
    outcomes = receipt["observations"]["toolOutcomes"]
    assert outcomes == [{"tool": "read_source", "allowed": True, "reason": "allowed"}]
    assert receipt["validation"]["references"] == "passed"
    assert receipt["observations"]["stopReason"] == "stop"
    assert "enforcement" in receipt["limits"]


def test_a_worker_cites_a_granted_parent_observation_receipt(delegation: Delegation) -> None:
    """Seed 001 §4 rows 3-4 on real Pi: the parent's observation is a receipt the host issued;
    the worker fetches it through ``cite_receipt`` and names it as evidence; the host judges the
    reference against its table and issues a check receipt for the output it judged."""
    source_id = delegation.capture()
    receipt_id = delegation.observe(source_id)
    job = delegation.run_granted("cite-receipt", source_id, (receipt_id,))
    worker = delegation.work()
    out, err = worker.communicate(timeout=CLI_TIMEOUT_SECONDS)
    assert worker.returncode == 0, out + err
    item = delegation.collect(job["batchId"])["items"][0]
    receipt, result = item["receipt"], item["result"]
    assert receipt["hostStatus"] == "ready", receipt
    assert {"evidenceId": "E2", "receiptId": receipt_id} in result["evidence"]
    outcomes = receipt["observations"]["toolOutcomes"]
    assert [o["tool"] for o in outcomes] == ["cite_receipt", "read_source"]
    assert all(o["allowed"] for o in outcomes)
    kinds = receipt["observations"]["citedEvidenceKinds"]
    assert kinds["parent_observation"] == 1
    assert kinds["snapshot_source"] == 1
    assert receipt["observations"]["hostCheckReceipt"].startswith("chk-")


def test_usage_totals_equal_the_sum_of_the_per_turn_usage(delegation: Delegation) -> None:
    item = delegation.run_to_end("valid")
    usage = item["receipt"]["usage"]
    turns = usage["perRequest"]
    # Two model turns: the read_source call, then the answer; each one reported and admitted.
    assert len(turns) == 2 == usage["reportedCalls"] == usage["requests"]
    assert len(delegation.model.exchanges()) == 2
    for key in ("input", "output"):
        assert all(isinstance(t[key], int) for t in turns)
        assert all(t[key] > 0 for t in turns)
        assert usage[key] == sum(t[key] for t in turns)


def test_a_result_citing_a_nonexistent_source_is_invalid(delegation: Delegation) -> None:
    item = delegation.run_to_end("unknown-source")
    assert item["receipt"]["hostStatus"] == "invalid"
    assert item["receipt"]["correctable"] is False
    assert "src-000" in item["receipt"]["problem"]


def test_a_result_quoting_a_wrong_range_is_invalid(delegation: Delegation) -> None:
    item = delegation.run_to_end("wrong-range")
    assert item["receipt"]["hostStatus"] == "invalid"
    assert "line range is impossible" in item["receipt"]["problem"]


def test_bash_and_delegate_are_refused_and_recorded_as_denied(delegation: Delegation) -> None:
    item = delegation.run_to_end("denied-tools")
    outcomes = item["receipt"]["observations"]["toolOutcomes"]
    denied = {o["tool"]: o for o in outcomes if not o["allowed"]}
    assert set(denied) == {"bash", "delegate"}
    assert denied["bash"]["reason"] == "tool bash is not granted"
    assert not (delegation.project / "escaped").exists()
    # The worker went on with its broker and still produced a checked result.
    assert item["receipt"]["hostStatus"] == "ready"


def test_output_over_the_ceiling_is_aborted_invalid_and_recorded(delegation: Delegation) -> None:
    item = delegation.run_to_end("overflow", maxOutputBytes=4096)
    receipt = item["receipt"]
    assert receipt["hostStatus"] == "invalid"
    assert item["result"] is None
    assert receipt["responseLimits"]["overflow"] is True
    received = receipt["responseLimits"]["rawBytesReceived"]
    # Reading stopped at the chunk that crossed the ceiling (the model streams 24-character
    # pieces of a 40 kB answer), not after the whole message arrived.
    assert 4096 < received < 4096 + 1024
    assert receipt["responseLimits"]["parsedBytesRetained"] == 0
    assert receipt["validation"]["truncation"] == "overflow"


def test_the_request_limit_stops_the_worker_before_its_next_turn(
    delegation: Delegation,
) -> None:
    item = delegation.run_to_end("slow", maxRequests=3)
    receipt = item["receipt"]
    assert receipt["hostStatus"] == "failed"
    assert receipt["problem"] == "the model-request limit is reached"
    assert receipt["usage"]["requests"] == 3
    # The third turn's search was blocked before it ran; Pi may send the blocked result back
    # once before the kill lands (the documented window), never more.
    allowed = [o for o in receipt["observations"]["toolOutcomes"] if o["allowed"]]
    assert len(allowed) == 2
    assert len(delegation.model.exchanges()) <= 4


def test_a_permanent_provider_error_is_a_failure_and_nobody_retries_it(
    delegation: Delegation,
) -> None:
    item = delegation.run_to_end("provider-refusal")
    receipt = item["receipt"]
    assert receipt["hostStatus"] == "failed"
    assert receipt["observations"]["stopReason"] == "error"
    # The worker's settings turn Pi's automatic retries off: one request, no retry seen.
    assert receipt["observations"]["providerRetries"] == 0
    # A 400 is not load or transport: the host does not retry it either.
    failure = receipt["observations"]["failure"]
    assert (failure["kind"], failure["classification"]) == ("provider_error", "permanent")
    assert "400" in failure["errorMessage"]
    assert receipt["usage"]["requests"] == 1
    assert len(receipt["attempts"]) == 1
    assert delegation.model.exchanges() == []  # (refused requests are not exchanges)
    assert item["result"] is None


def test_a_transient_provider_error_is_retried_once_by_the_host_and_succeeds(
    delegation: Delegation,
) -> None:
    item = delegation.run_to_end("transient-once")
    receipt = item["receipt"]
    assert receipt["hostStatus"] == "ready", receipt
    attempts = receipt["attempts"]
    assert [a["hostStatus"] for a in attempts] == ["failed", "ready"]
    assert attempts[0]["stopReason"] == "error"
    assert attempts[0]["failure"]["classification"] == "transient"
    assert "500" in attempts[0]["failure"]["errorMessage"]
    assert attempts[1]["possibleDuplicateBilling"] is True
    # A fresh worker: the retry read its source again (its own first turn).
    assert receipt["observations"]["toolOutcomes"] == [
        {"tool": "read_source", "allowed": True, "reason": "allowed"}
    ]
    # One failed request, then the retry's two answered: each admitted, all in the totals.
    usage = receipt["usage"]
    assert usage["requests"] == 3
    assert len(delegation.model.exchanges()) == 2
    assert [a["requests"] for a in attempts] == [1, 2]
    assert usage["input"] == sum(t["input"] or 0 for t in usage["perRequest"])


def test_a_persistent_transient_error_is_retried_at_most_twice(delegation: Delegation) -> None:
    item = delegation.run_to_end("provider-error")
    receipt = item["receipt"]
    assert receipt["hostStatus"] == "failed"
    assert receipt["observations"]["providerRetries"] == 0  # Pi's own retries stay off
    assert [a["requests"] for a in receipt["attempts"]] == [1, 1, 1]
    assert "retries are used" in receipt["observations"]["failure"]["retry"]
    assert delegation.model.exchanges() == []  # all three failed (500)
    assert item["result"] is None


def test_a_job_cancelled_mid_run_publishes_no_late_result(
    tmp_path: Path, runtime: PiRuntime
) -> None:
    # Slow streaming: every model turn takes a while, so the cancel lands mid-run.
    with ScriptedModelServer("worker", chunk_delay=0.2) as model:
        world = Delegation(base=tmp_path, model=model)
        # Room for 30 slow turns: the cancel lands long before the request limit would.
        world.setup(maxRequests=30)
        job = world.run("slow", world.capture(), maxRequests=30)
        worker = world.work()
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                state = world.cli("status", None)
                batch = state["batches"][0]["jobs"][0]
                if batch["state"] == "running" and len(model.exchanges()) >= 2:
                    break
                time.sleep(0.3)
            cancelled = world.cli(
                "cancel", {"version": 1, "op": "cancel", "batchId": job["batchId"]}
            )
            assert cancelled["cancelled"] == [job["jobId"]]
            out, err = worker.communicate(timeout=CLI_TIMEOUT_SECONDS)
            assert worker.returncode == 0, out + err
        finally:
            if worker.poll() is None:
                worker.kill()
        item = world.collect(job["batchId"])["items"][0]
        receipt = item["receipt"]
        assert receipt["hostStatus"] == "cancelled"
        assert item["result"] is None
        assert receipt["settlement"] == "settled"
        # The killed worker's report arrived after the revocation: dropped, never published.
        assert receipt["observations"]["lateResultsDropped"] == 1
        asked = len(model.exchanges())
        time.sleep(1.0)
        assert len(model.exchanges()) == asked  # nothing runs after the kill


def test_collect_across_a_host_restart(delegation: Delegation) -> None:
    job = delegation.run("valid", delegation.capture())
    first = delegation.collect(job["batchId"])
    assert first["items"] == []
    assert first["pending"]
    worker = delegation.work()
    out, err = worker.communicate(timeout=CLI_TIMEOUT_SECONDS)
    assert worker.returncode == 0, out + err
    # Each collect is a new process: a host built from the durable session alone.
    after = delegation.collect(job["batchId"])
    again = delegation.collect(job["batchId"])
    assert after["items"] == again["items"]
    assert after["items"][0]["receipt"]["hostStatus"] == "ready"
    cursor = after["collectionCursor"]
    assert delegation.collect(job["batchId"], afterCursor=cursor)["items"] == []


def _recorded_worker(world: Delegation) -> int | None:
    """The running attempt's worker pid as the host recorded it (read from the store)."""
    path = world.base / "root" / "delegation" / "sessions" / "s1" / "state.json"
    if not path.exists():
        return None
    state = json.loads(path.read_text(encoding="utf-8"))
    for batch in state["batches"].values():
        for job in batch["jobs"]:
            worker = job["attempts"][-1].get("worker")
            if job["attempts"][-1]["state"] == "running" and worker is not None:
                pid: int = worker["pid"]
                return pid
    return None


def test_collect_after_the_host_was_killed_mid_job(tmp_path: Path, runtime: PiRuntime) -> None:
    """``delegate work`` killed with SIGKILL while its worker runs: the next CLI process
    settles the job at once (``host_lost``, not at its deadline), the worker Pi is gone, and
    ``collect`` across the restart returns the failure."""
    with ScriptedModelServer("worker", chunk_delay=0.2) as model:
        world = Delegation(base=tmp_path, model=model)
        world.setup(maxRequests=30)
        job = world.run("slow", world.capture(), maxRequests=30)
        host = world.work()
        try:
            deadline = time.monotonic() + 60
            worker = None
            while time.monotonic() < deadline:
                worker = _recorded_worker(world)
                if worker is not None and len(model.exchanges()) >= 2:
                    break
                time.sleep(0.2)
            assert worker is not None, "the worker ran"
            host.send_signal(signal.SIGKILL)
            host.wait(10)
        finally:
            if host.poll() is None:
                host.kill()
        started = time.monotonic()
        status = world.cli("status", None)
        row = status["batches"][0]["jobs"][0]
        assert row["state"] == "failed"
        item = world.collect(job["batchId"])["items"][0]
        receipt = item["receipt"]
        assert receipt["observations"]["stopReason"] == "host_lost"
        assert receipt["settlement"] == "settled"
        assert receipt["problem"].startswith("host_lost: pid ")
        assert item["result"] is None
        assert time.monotonic() - started < 60  # not the job's 120 s deadline
        assert not _alive(worker)
        asked = len(model.exchanges())
        time.sleep(1.0)
        assert len(model.exchanges()) == asked  # nothing runs after the settlement


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as file:
            return file.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _main_pi_delegates(
    world: Delegation,
    runtime: PiRuntime,
    behaviour: str,
    max_requests: int = 8,
    extensions: tuple[str, ...] = (),
    *,
    pi_argv: Callable[..., list[str]] | None = None,
) -> tuple[Any, str]:
    """A main Pi with the package (and ``extensions``) whose ``delegate`` tool admits one job
    (a worker in its bridge); the open client and the batch ID. ``pi_argv(runtime, *args)``:
    Pi's command line (default: the scripted model's ``fake`` provider)."""
    from tests.e2e.pi_rpc_client import PiRpcClient
    from tests.e2e.real_pi import EXTENSION, scripted_rpc_argv

    question = f"Anything?\nscripted-policy: worker\nworker-behaviour: {behaviour}\n"
    request = {
        "version": 1,
        "op": "run",
        "objective": "a look without sources",
        "requirements": [{"id": "R1", "text": "answer"}],
        "jobs": [
            {
                "key": "k1",
                "mode": "consult",
                "question": question,
                "requirements": ["R1"],
                "sourceIds": [],
                "acceptance": "an answer",
                "reason": "a second opinion",
            }
        ],
        "limits": {"maxRequests": max_requests, "deadlineMs": 120_000},
    }
    env = {**world.env(), "PI_SQUAD_BRIDGE": json.dumps([*CLI[:1], "-m", "entrypoints.bridge"])}
    env["PATH"] = f"{Path(runtime.node_path).parent}{os.pathsep}{env.get('PATH', '')}"
    loaded = [arg for extension in (str(EXTENSION), *extensions) for arg in ("-e", extension)]
    client = PiRpcClient((pi_argv or scripted_rpc_argv)(runtime, *loaded), env, world.project)
    prompt = (
        "Delegate.\nscripted-policy: tool-once\nscripted-tool: delegate\n"
        f"scripted-args: {json.dumps(request)}"
    )
    records = client.prompt(prompt, timeout=90)
    results = [
        r["message"]
        for r in records
        if r.get("type") == "message_end" and r["message"].get("role") == "toolResult"
    ]
    assert results, "the delegate tool ran"
    assert not results[-1].get("isError"), results[-1]
    text = "".join(block.get("text", "") for block in results[-1]["content"])
    batch_id: str = json.loads(text)["batchId"]
    return client, batch_id


def _main_collect(world: Delegation, batch_id: str, wait_ms: int = 2000) -> dict[str, Any]:
    """``delegate collect`` on the main Pi's session (``default``, grant = the policy file)."""
    argv = world.argv("collect")
    argv[argv.index("--grant-root") : argv.index("--grant-root") + 2] = []
    argv[argv.index("--session") + 1] = "default"
    done = subprocess.run(
        [*argv, "--request", "-"],
        input=json.dumps({"version": 1, "op": "collect", "batchId": batch_id, "waitMs": wait_ms}),
        env=world.env(),
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    outcome: dict[str, Any] = json.loads(done.stdout)
    return outcome


def test_the_main_pis_delegate_tool_runs_a_worker_in_its_bridge(
    tmp_path: Path, runtime: PiRuntime
) -> None:
    """With a policy file the main role offers ``delegate``; a ``run`` through it starts a real
    worker in the main bridge's process, whose result the CLI then collects."""
    with ScriptedModelServer("echo") as model:
        world = Delegation(base=tmp_path, model=model)
        world.setup()
        client, batch_id = _main_pi_delegates(world, runtime, "valid")
        try:
            deadline = time.monotonic() + 90
            items: list[dict[str, Any]] = []
            while not items and time.monotonic() < deadline:
                items = _main_collect(world, batch_id)["items"]
        finally:
            client.close()
        assert items, "the worker in the main bridge published its result"
        assert items[0]["receipt"]["hostStatus"] == "ready"
        assert items[0]["result"]["answer"] == "no sources"


def test_a_main_pi_session_switch_cancels_its_running_workers(
    tmp_path: Path, runtime: PiRuntime
) -> None:
    """Pi's ``new_session`` (``session_before_switch``, then ``session_shutdown``): the main
    host navigates, so the running job is cancelled, its worker killed and nothing published."""
    from domain.delegation.navigation import navigation_reason

    with ScriptedModelServer("echo", chunk_delay=0.2) as model:
        world = Delegation(base=tmp_path, model=model)
        # Room for 30 slow turns: the switch lands long before the request limit would.
        world.setup(maxRequests=30)
        client, batch_id = _main_pi_delegates(world, runtime, "slow", max_requests=30)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                asked = [
                    e for e in model.exchanges() if e.policy == "worker" and e.reply.tool_calls
                ]
                if asked:
                    break
                time.sleep(0.3)
            client.command({"type": "new_session"}, timeout=60)
            item = _main_collect(world, batch_id, wait_ms=0)["items"][0]
        finally:
            client.close()
        receipt = item["receipt"]
        assert receipt["hostStatus"] == "cancelled"
        # The before-event's navigation (sent first, not awaited) normally wins the store lock;
        # the shutdown's navigation is the second chance.
        assert receipt["reason"] in {
            f"task navigation: {navigation_reason(event, reason='new')}"
            for event in ("session_before_switch", "session_shutdown")
        }
        assert receipt["settlement"] == "settled"
        assert item["result"] is None
        calls = len(model.exchanges())
        time.sleep(1.0)
        assert len(model.exchanges()) == calls  # the worker is gone
