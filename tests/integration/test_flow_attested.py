"""Attested flows (issue 15 item 6) through the real command line and container, with the fake
child runtime in place of Pi: the brief is published once as a file squad, each child is a
spec child of it, and a run counts only with a full-read attestation the parent observed."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers

from application.flows.run_flow import FlowContext
from application.ports import IsolationSupport, NewSession
from application.squads.scheduler import NO_ISOLATION
from domain.child_environment import SPEC_PATH, SQUAD_ID, TASK_ID
from domain.chunks import ChunkTable
from domain.errors import ErrorCode
from domain.flows.errors import FlowError
from entrypoints.bridge_container import BridgeContainer
from entrypoints.cli import main
from tests.fakes.child_runtime import FakeChild, FakeChildRuntime
from tests.fakes.flows import ScriptedRuntime, answer
from tests.fakes.pi_harness import FakePiChild, read, tool
from tests.integration.flow_cli_support import FlowCli

WHY = "independent verification"
# Four chunks of 32 KiB: a child must ask for each one.
BRIEF = (
    "# Brief\n" + "All work follows the house rules, exactly as written here.\n" * 1800
).encode()


def texts_of(message: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(block["text"] for block in message["content"])


def child_pi(environment: Mapping[str, str]) -> FakePiChild:
    """The child's Pi extension, from the environment the parent gave the child."""

    def make_role() -> Any:
        bridge = BridgeContainer()
        bridge.environ.override(providers.Object(dict(environment)))
        return bridge.child_events(bridge.process_role())

    return FakePiChild(make_role)


def bind_session(child: FakeChild) -> None:
    """The child reports its new session, whose file Pi writes in the directory it was given."""
    session = child.request.session
    assert isinstance(session, NewSession)
    os.makedirs(session.session_dir, exist_ok=True)
    Path(session.session_dir, "s.jsonl").write_bytes(b'{"type":"session"}\n')
    child.bind(f"{session.session_dir}/s.jsonl")


def reader(then: Callable[[FakeChild, FakePiChild], object] | None = None) -> Callable[..., None]:
    """An honest child: it reads every chunk through its guard, and the parent sees the reads
    on its stream; ``then`` runs after (more tool calls), before it answers."""

    def script(child: FakeChild) -> None:
        pi = child_pi(child.request.environment)
        count = ChunkTable.of(BRIEF).chunk_count
        calls = [read(i, f"{child.task_id}-read-{i}") for i in range(count)]
        results = pi.assistant_message(calls)
        bind_session(child)
        child.read_chunks(
            [
                (c.id, {"index": i}, texts_of(r))
                for i, (c, r) in enumerate(zip(calls, results, strict=True))
            ]
        )
        if then is not None:
            then(child, pi)
        child.say(f"{child.task_id}: read the brief, did the work")
        child.settle()

    return script


class IsolationAwareRuntime(FakeChildRuntime):
    """``run`` asks its runtime what it can confine before it drives."""

    isolation = NO_ISOLATION


class Cli(FlowCli):
    """The command line over a project holding the brief every child must read."""

    def __init__(self, base: Path) -> None:
        super().__init__(base, ScriptedRuntime(default=reader()))
        self.brief = self.cwd / "brief.md"
        self.brief.write_bytes(BRIEF)
        self.digest = hashlib.sha256(BRIEF).hexdigest()

    def spec(self, **changes: str) -> dict[str, str]:
        return {"specFile": "brief.md", "specSha256": self.digest, **changes}

    def flow(self, document: object, capsys: pytest.CaptureFixture[str]) -> tuple[int, Any]:
        code = self.run("--call", self.call_file(document), "--json")
        out = capsys.readouterr().out
        return code, json.loads(out.splitlines()[-1])

    def squads(self) -> list[str]:
        if not self.root.exists():
            return []
        return sorted(p.name for p in self.root.iterdir() if not p.name.startswith("."))

    def squad_record(self, squad_id: str) -> dict[str, Any]:
        document: dict[str, Any] = json.loads((self.root / squad_id / "squad.json").read_text())
        return document


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def test_every_child_reads_the_brief_and_the_result_shows_its_attestation(
    cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    code, document = cli.flow(
        {
            "tasks": [
                {"agent": "researcher", "task": "a", "tools": ["read"]},
                {"agent": "reviewer", "task": "b", "tools": ["read"]},
            ],
            "tier": "capable",
            "why": WHY,
            "spec": cli.spec(),
        },
        capsys,
    )
    assert code == 0, document
    assert document["status"] == "completed"
    assert [r["attestation"]["status"] for r in document["results"]] == ["valid", "valid"]
    spec = document["spec"]
    (squad_id,) = cli.squads()
    assert spec["squadId"] == squad_id
    assert (spec["sha256"], spec["bytes"], spec["chunks"]) == (cli.digest, len(BRIEF), 4)
    assert spec["verify"] == f"pi-squad verify {squad_id}"
    # Published once: the canonical copy is the brief's exact bytes, read-only.
    canonical = cli.root / squad_id / "spec" / "spec.v1.json"
    assert canonical.read_bytes() == BRIEF
    assert not canonical.stat().st_mode & 0o222
    # Each child was a spec child of that squad, its session in its task's ledger directory.
    for child in cli.scripted.runtime.spawned:
        environment = child.request.environment
        assert environment[SQUAD_ID] == squad_id
        assert environment[TASK_ID] == child.task_id
        assert environment[SPEC_PATH] == str(canonical)
        assert child.request.session.session_dir == str(  # type: ignore[union-attr]
            cli.root / squad_id / child.task_id / "session"
        )
    assert cli.squad_record(squad_id)["status"] == "done"
    assert main(["verify", squad_id], cli.container()) == 0
    assert "attestation valid" in capsys.readouterr().out


def test_a_child_that_answers_without_reading_fails_and_nothing_downstream_sees_it(
    cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    cli.scripted.scripts["step-1"] = answer("I know the brief already")
    code, document = cli.flow(
        {
            "task": "t",
            "chain": [{"agent": "researcher", "task": "one"}, {"agent": "reviewer", "task": "two"}],
            "why": WHY,
            "spec": cli.spec(),
        },
        capsys,
    )
    assert code == 1
    first, second = document["results"]
    assert first["status"] == "failed"
    assert first["error"]["code"] == "ATTESTATION_INVALID"
    assert first["attestation"]["status"] == "missing"
    assert second["status"] == "skipped"
    assert second["attestation"]["status"] == "missing"
    assert [c.task_id for c in cli.scripted.runtime.spawned] == ["step-1"]
    (squad_id,) = cli.squads()
    assert cli.squad_record(squad_id)["status"] == "failed"


def test_reads_the_parent_never_observed_do_not_count(
    cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    """The child's own ledger says complete, but its stream showed no reads: ungrounded."""

    def silent_reader(child: FakeChild) -> None:
        pi = child_pi(child.request.environment)
        pi.assistant_message([read(i) for i in range(ChunkTable.of(BRIEF).chunk_count)])
        bind_session(child)
        child.say("done")
        child.settle()

    cli.scripted.scripts["single"] = silent_reader
    code, document = cli.flow(
        {"agent": "researcher", "task": "t", "why": WHY, "spec": cli.spec()}, capsys
    )
    assert code == 1
    (result,) = document["results"]
    assert result["error"]["code"] == "ATTESTATION_INVALID"
    assert result["attestation"]["status"] == "invalid"
    assert "not grounded" in result["attestation"]["reason"]


def test_no_other_tool_runs_before_the_brief_is_read(
    cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    blocked: list[dict[str, Any]] = []

    def eager(child: FakeChild) -> None:
        pi = child_pi(child.request.environment)
        blocked.extend(pi.assistant_message([tool("bash", command="cat brief.md")]))
        assert pi.executed_names() == []
        reader(lambda _child, pi: pi.assistant_message([tool("bash", command="ls")]))(child)

    cli.scripted.scripts["single"] = eager
    code, document = cli.flow(
        {"agent": "researcher", "task": "t", "why": WHY, "spec": cli.spec()}, capsys
    )
    assert code == 0, document
    (refusal,) = blocked
    assert refusal["isError"] is True
    assert "squad_spec_read" in texts_of(refusal)[0]


def test_a_tool_list_keeps_the_reader_and_node_ids_become_task_ids(
    cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    code, document = cli.flow(
        {
            "task": "t",
            "graph": {
                "nodes": [
                    {"id": "Scan_1", "agent": "researcher", "task": "scan", "tools": "none"},
                    {"id": "b", "agent": "reviewer", "task": "b", "dependsOn": ["Scan_1"]},
                ]
            },
            "why": WHY,
            "spec": cli.spec(),
        },
        capsys,
    )
    assert code == 0, document
    first, second = cli.scripted.runtime.spawned
    assert (first.task_id, second.task_id) == ("run-0", "node-b")
    assert first.request.tools == ("squad_spec_read",)
    assert [r["key"] for r in document["results"]] == ["node-Scan_1", "node-b"]


@pytest.mark.parametrize(
    ("change", "code", "path"),
    [
        ({"specSha256": "0" * 64}, "SPEC_HASH_MISMATCH", "$.spec.specSha256"),
        ({"specFile": "missing.md"}, "SPEC_UNSTABLE", "$.spec.specFile"),
        ({"specFile": "binary.bin"}, "SPEC_MALFORMED", "$.spec.specFile"),
        ({"specFile": "empty.md"}, "SPEC_MALFORMED", "$.spec.specFile"),
        ({"specSha256": "A" * 64}, "FLOW_INVALID", "$.spec.specSha256"),
    ],
)
def test_a_brief_that_fails_its_pin_is_refused_before_anything_is_written(
    cli: Cli, capsys: pytest.CaptureFixture[str], change: dict[str, str], code: str, path: str
) -> None:
    (cli.cwd / "binary.bin").write_bytes(b"\xff\xfe not text")
    (cli.cwd / "empty.md").write_bytes(b"")
    spec = cli.spec(**change)
    if change.get("specFile") in ("binary.bin", "empty.md"):
        spec["specSha256"] = hashlib.sha256((cli.cwd / change["specFile"]).read_bytes()).hexdigest()
    exit_code, document = cli.flow(
        {"agent": "researcher", "task": "t", "why": WHY, "spec": spec}, capsys
    )
    assert exit_code == 1
    assert document["error"]["code"] == code
    assert document["error"]["path"] == path
    assert "cause" in document["error"]
    assert cli.scripted.runtime.spawned == []
    assert cli.squads() == []
    assert not (cli.root / ".flows").exists()


def test_the_hash_refusal_never_says_the_actual_digest(
    cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    _code, document = cli.flow(
        {"agent": "researcher", "task": "t", "why": WHY, "spec": cli.spec(specSha256="1" * 64)},
        capsys,
    )
    assert cli.digest not in json.dumps(document)


def test_modes_that_spawn_nothing_take_no_spec(
    cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    code, document = cli.flow({"list": True, "spec": cli.spec()}, capsys)
    assert code == 1
    assert document["error"]["code"] == "FLOW_INVALID"
    assert "spec" not in document["error"]["allowed"], "list mode's closed schema has no spec"


def test_plain_text_shows_each_attestation_and_the_command_that_checks_it(
    cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    cli.scripted.scripts["step-2"] = answer("no reading needed")
    path = cli.base / "call.json"
    chain = [{"agent": "researcher", "task": "one"}, {"agent": "reviewer", "task": "two"}]
    path.write_text(json.dumps({"task": "t", "chain": chain, "why": WHY, "spec": cli.spec()}))
    code = main(["flow", "--call", str(path), "--cwd", str(cli.cwd)], cli.container())
    out = capsys.readouterr().out
    assert code == 1
    (squad_id,) = cli.squads()
    assert "    attestation valid\n" in out
    assert "    attestation missing: " in out
    assert f"check: pi-squad verify {squad_id}" in out


def test_a_flows_squad_is_never_driven_as_a_squad(
    cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    cli.flow({"agent": "researcher", "task": "t", "why": WHY, "spec": cli.spec()}, capsys)
    (squad_id,) = cli.squads()
    # As if the flow had died mid-run: the squad running, its task still in progress.
    record = cli.squad_record(squad_id)
    record["status"] = "running"
    (cli.root / squad_id / "squad.json").write_text(json.dumps(record))
    task_file = cli.root / squad_id / ".records" / "single" / "task.json"
    task = json.loads(task_file.read_text())
    task["status"] = "in_progress"
    task_file.write_text(json.dumps(task))
    container = cli.container()
    runtime = IsolationAwareRuntime()
    container.driver.runtime.override(providers.Object(runtime))
    code = main(["run", "--squad", squad_id, "--json"], container)
    document = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert code == 1
    assert document["error"]["code"] == "OPERATION_REFUSED"
    assert f"pi-squad verify {squad_id}" in document["error"]["message"]
    assert runtime.spawned == []


@pytest.mark.parametrize(
    ("isolation", "refused"),
    [(NO_ISOLATION, True), (IsolationSupport(mode="landlock", abi=4, reason=None), False)],
)
def test_an_attested_bash_ro_child_rests_on_the_kernel_alone(
    cli: Cli, isolation: IsolationSupport, refused: bool
) -> None:
    """Its Pi runs the spec child's guard, not the bash-ro screen: without Landlock nothing
    would keep its bash read-only, so the call is refused before anything is written."""
    container = cli.container()
    runner = container.driver.flow_runner(
        runtime=cli.scripted.runtime, isolation=isolation, bash_ro_allowlist=True
    )
    call = {"agent": "researcher", "task": "t", "why": WHY, "tools": "read,bash-ro"}
    context = FlowContext(cwd=str(cli.cwd))
    if refused:
        with pytest.raises(FlowError) as caught:
            runner.run({**call, "spec": cli.spec()}, context)
        assert caught.value.code is ErrorCode.BASH_READONLY_UNENFORCEABLE
        assert cli.squads() == []
        assert cli.scripted.runtime.spawned == []
        # The same call unattested is screened by the allowlist in the child.
        assert runner.run(call, context).document()["results"][0]["enforcement"] == "allowlist"
        return
    (result,) = runner.run({**call, "spec": cli.spec()}, context).document()["results"]
    assert result["enforcement"] == "sandbox"
    (child,) = cli.scripted.runtime.spawned
    assert child.request.confinement is not None
    assert child.request.confinement.project_dir == child.request.confinement.ledger_dir
