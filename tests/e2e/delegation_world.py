"""The delegation world the real-Pi delegation tests share: a project with one defective source
file, a scripted model in its ``worker`` policy, and the ``pi-squad delegate`` commands run as
separate processes (so every collect is a fresh host reading the durable session)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest

from adapters.pi_runtime import PiRuntime
from adapters.scripted_model import ScriptedModelServer, write_models_json
from adapters.scripted_model.models_json import MODEL_ID, PROVIDER
from tests.e2e.real_pi import CLI, CLI_TIMEOUT_SECONDS

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
        return self.call(self.argv(op), request)

    def call(self, argv: list[str], request: dict[str, Any] | None) -> dict[str, Any]:
        """``argv`` run with ``request`` (if any) on its standard input; its JSON answer."""
        if request is not None:
            argv = [*argv, "--request", "-"]
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


@pytest.fixture(name="delegation")
def delegation_world(tmp_path: Path, runtime: PiRuntime) -> Any:
    with ScriptedModelServer("worker") as model:
        world = Delegation(base=tmp_path, model=model)
        world.setup()
        yield world


def main_pi_delegates(
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
    from tests.e2e.main_pi import call_tool_once
    from tests.e2e.pi_rpc_client import PiRpcClient
    from tests.e2e.real_pi import EXTENSION, scripted_rpc_argv

    request = consult_request(behaviour, max_requests)
    loaded = [arg for extension in (str(EXTENSION), *extensions) for arg in ("-e", extension)]
    argv = (pi_argv or scripted_rpc_argv)(runtime, *loaded)
    client = PiRpcClient(argv, main_pi_environment(world, runtime), world.project)
    text, failed = call_tool_once(client, "Delegate.", "delegate", request)
    assert not failed, text
    batch_id: str = json.loads(text)["batchId"]
    return client, batch_id


def consult_request(behaviour: str, max_requests: int) -> dict[str, Any]:
    """A ``run`` of one ``consult`` job without sources (key ``k1``) whose worker behaves as
    ``behaviour`` says (further ``marker: value`` lines may follow it)."""
    question = f"Anything?\nscripted-policy: worker\nworker-behaviour: {behaviour}\n"
    return {
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


def main_pi_environment(world: Delegation, runtime: PiRuntime) -> dict[str, str]:
    """A main Pi's environment in ``world``: its bridge from this checkout, node on PATH."""
    env = {**world.env(), "PI_SQUAD_BRIDGE": json.dumps([*CLI[:1], "-m", "entrypoints.bridge"])}
    env["PATH"] = f"{Path(runtime.node_path).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def main_collect(world: Delegation, batch_id: str, wait_ms: int = 2000) -> dict[str, Any]:
    """``delegate collect`` on the main Pi's session (``default``, grant = the policy file)."""
    argv = world.argv("collect")
    argv[argv.index("--grant-root") : argv.index("--grant-root") + 2] = []
    argv[argv.index("--session") + 1] = "default"
    return world.call(argv, {"version": 1, "op": "collect", "batchId": batch_id, "waitMs": wait_ms})


def main_collected(world: Delegation, batch_id: str, timeout: float = 90.0) -> list[dict[str, Any]]:
    """The main Pi's batch collected until it has items or ``timeout`` seconds have passed
    (each collect itself waits a while): its items, none if it had none by then."""
    deadline = time.monotonic() + timeout
    items: list[dict[str, Any]] = []
    while not items and time.monotonic() < deadline:
        items = main_collect(world, batch_id)["items"]
    return items


@contextmanager
def slow_job(base: Path) -> Iterator[tuple[Delegation, dict[str, Any], subprocess.Popen[str]]]:
    """One job whose every model turn is slow, so that whatever a test aims at it lands
    mid-run, started by ``delegate work``: the world, the admitted job and the ``work``
    process (killed on the way out if it still runs)."""
    with ScriptedModelServer("worker", chunk_delay=0.2) as model:
        world = Delegation(base=base, model=model)
        # Room for 30 slow turns: the test acts long before the request limit would end it.
        world.setup(maxRequests=30)
        job = world.run("slow", world.capture(), maxRequests=30)
        work = world.work()
        try:
            yield world, job, work
        finally:
            if work.poll() is None:
                work.kill()
