"""``pi-squad status``, ``modify`` and ``review`` in a subprocess over a real squad root: JSON
shapes, exit codes, read-only status, and a running scheduler picking the changes up."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

from adapters.isolation.landlock import LandlockIsolation, probe_landlock
from application.squads.operations import NewTask, SquadOperations
from domain.squad.model import SquadStatus, TaskStatus
from tests.builders import spec_document
from tests.integration.cli_support import (
    CLI,
    CliRun,
    Sandbox,
    create_arguments,
    run_cli,
    tree_snapshot,
)
from tests.integration.ops_support import (
    finish,
    publish_legacy,
    published,
    run_to_review,
    squad_files,
    squad_status,
    status_reader,
)
from tests.integration.scheduler_steps import started
from tests.runtime_world import RuntimeWorld
from tests.squads import BAD_NEW_TASKS, multi_chunk_spec

EVIDENCE_ARGS = [
    "--contract-check",
    "every task implemented",
    "--contract-check",
    "no spec field skipped",
    "--diff-review",
    "read the whole diff",
    "--verification",
    "pytest: 12 passed",
    "--integration",
    "ran it end to end",
]


@pytest.fixture
def world(tmp_path: Path) -> RuntimeWorld:
    return published(tmp_path / "w")


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return Sandbox.create(tmp_path / "cli")


def cli(sandbox: Sandbox, world: RuntimeWorld, *arguments: str) -> CliRun:
    return run_cli(sandbox, list(arguments), root=world.root)


def modify(sandbox: Sandbox, world: RuntimeWorld, *arguments: str) -> CliRun:
    """``pi-squad modify`` of the world's squad, with ``--json``."""
    return cli(sandbox, world, "modify", world.squad_id, *arguments, "--json")


def ok(run: CliRun) -> dict[str, Any]:
    assert run.returncode == 0, (run.stdout, run.stderr)
    return run.json()


def error(run: CliRun, code: str, exit_code: int = 1) -> str:
    assert run.returncode == exit_code, (run.stdout, run.stderr)
    assert run.error_code() == code, run.stdout
    message: str = run.json()["error"]["message"]
    return message


def read_chunks(world: RuntimeWorld, task_id: str, indices: list[int]) -> None:
    world.child_reads(task_id, indices)


# -- status -----------------------------------------------------------------------------------


def test_status_json_lists_each_task_with_its_attestation_and_chunks(
    sandbox: Sandbox, world: RuntimeWorld
) -> None:
    world.attest("design", observed=True)
    document = ok(cli(sandbox, world, "status", world.squad_id, "--json"))
    assert set(document) == {
        "squadId", "status", "driven", "progress", "review", "isolation", "spec", "tasks",
    }  # fmt: skip
    # Nothing drives this squad: the kernel says nobody holds its driver lock.
    assert document["driven"] is (False if sys.platform.startswith("linux") else None)
    assert document["isolation"] == {
        "mode": None,
        "layers": None,
        "statement": "not yet decided: no child has run",
    }
    assert document["squadId"] == world.squad_id
    assert document["status"] == "running"
    assert document["progress"] == {"done": 0, "total": 4, "cancelled": 0}
    assert document["review"] is None
    spec = world.store.snapshot(world.squad_id).squad.spec
    assert spec is not None
    assert document["spec"] == {
        "schemaVersion": 1,
        "sha256": spec.sha256,
        "bytes": spec.bytes,
        "path": spec.path,
        "chunkBytes": 32768,
        "chunkCount": spec.chunk_count,
    }
    tasks = {t["taskId"]: t for t in document["tasks"]}
    assert list(tasks) == ["build", "design", "docs", "qa"]
    assert tasks["design"] == {
        "taskId": "design",
        "agent": "architect",
        "status": "pending",
        "attestation": "valid",
        "chunksRead": spec.chunk_count,
        "chunkCount": spec.chunk_count,
        "reason": None,
        "monitor": None,
    }
    assert tasks["build"]["attestation"] == "missing"
    assert tasks["build"]["chunksRead"] == 0


def test_status_counts_partially_read_chunks(tmp_path: Path, sandbox: Sandbox) -> None:
    world = published(tmp_path / "multi", multi_chunk_spec(4))
    spec = world.store.snapshot(world.squad_id).squad.spec
    assert spec is not None
    assert spec.chunk_count >= 3
    read_chunks(world, "design", [spec.chunk_count - 1, 0])
    tasks = {t["taskId"]: t for t in ok(cli(sandbox, world, "status", "--json"))["tasks"]}
    assert tasks["design"]["attestation"] == "missing"
    assert tasks["design"]["chunksRead"] == 2
    text = status_reader(world).status(world.squad_id).text()
    assert f"design (architect) [pending] chunks 2/{spec.chunk_count}" in text


def test_status_text_in_file_mode_never_shows_spec_fields(
    sandbox: Sandbox, world: RuntimeWorld
) -> None:
    world.attest("design", observed=True)
    run = cli(sandbox, world, "status", world.squad_id)
    assert run.returncode == 0, run.stderr
    text = run.stdout
    lines = text.splitlines()
    assert lines[0] == f"Squad: {world.squad_id}"
    assert lines[1] == "Status: running"
    assert lines[2] == "Progress: 0/4 tasks done"
    assert lines[3].startswith("Elapsed: ")
    assert lines[4] == "Cost: $0.0000"
    assert "· design (architect) [pending] chunks 1/1" in lines
    assert "◻ build (backend) [blocked] chunks 0/1 blocked by: design" in lines
    assert "Ship a tested feature" not in text
    assert "Task design" not in text
    assert "run the tests to verify" not in text


def test_status_text_of_a_legacy_squad_shows_titles_icons_and_cancellations(
    sandbox: Sandbox, world: RuntimeWorld, ops: SquadOperations
) -> None:
    legacy = publish_legacy(world)
    ops.complete_task(legacy, "api", "done")
    ops.cancel_task(legacy, "ui")
    ops.add_task(legacy, NewTask(id="later", title="Later work", agent="backend", depends=("ui",)))
    run = cli(sandbox, world, "status", legacy)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert "Progress: 1/2 active tasks done · 1 cancelled · 3 total" in lines
    assert "✓ api (backend) — Build the API [done]" in lines
    assert "⊘ ui (backend) — Build the UI [cancelled]" in lines
    assert "◻ later (backend) — Later work [blocked] blocked by: ui" in lines
    document = ok(cli(sandbox, world, "status", legacy, "--json"))
    assert document["spec"] is None
    assert document["progress"] == {"done": 1, "total": 3, "cancelled": 1}
    assert {t["attestation"] for t in document["tasks"]} == {"not_required"}
    assert {t["chunksRead"] for t in document["tasks"]} == {None}


def test_status_without_an_id_shows_the_newest_squad(sandbox: Sandbox, world: RuntimeWorld) -> None:
    legacy = publish_legacy(world)  # created earlier than the file squad
    assert ok(cli(sandbox, world, "status", "--json"))["squadId"] == world.squad_id
    assert legacy != world.squad_id


def test_status_with_no_squads_is_a_clear_error(sandbox: Sandbox, tmp_path: Path) -> None:
    empty = str(tmp_path / "empty-root")
    run = run_cli(sandbox, ["status", "--json"], root=empty)
    assert run.returncode == 1
    assert run.error_code() == "SQUAD_NOT_FOUND"
    text = run_cli(sandbox, ["status"], root=empty)
    assert text.returncode == 1
    assert "no squads under" in text.stderr
    assert text.stdout == ""
    unknown = run_cli(sandbox, ["status", "nope", "--json"], root=empty)
    assert unknown.error_code() == "SQUAD_NOT_FOUND"


def test_status_is_read_only(sandbox: Sandbox, world: RuntimeWorld) -> None:
    world.attest("design", observed=True)
    build_state = Path(world.root, world.squad_id, "build", "spec-read-state.json")
    conflicting = Path(world.root, world.squad_id, "design", "spec-read-state.json").read_bytes()
    build_state.write_bytes(conflicting)  # an INVALID record is reported, never moved
    before = tree_snapshot(Path(world.root))
    document = ok(cli(sandbox, world, "status", "--json"))
    cli(sandbox, world, "status")
    assert tree_snapshot(Path(world.root)) == before
    tasks = {t["taskId"]: t for t in document["tasks"]}
    assert tasks["build"]["attestation"] == "missing"
    assert tasks["build"]["chunksRead"] is None


def test_status_reports_review_and_a_changed_canonical_spec(
    sandbox: Sandbox, world: RuntimeWorld
) -> None:
    run_to_review(world)
    document = ok(cli(sandbox, world, "status", "--json"))
    assert document["status"] == "review"
    assert document["review"]["status"] == "pending"
    assert document["review"]["verdict"] is None
    spec = world.store.snapshot(world.squad_id).squad.spec
    assert spec is not None
    Path(spec.path).chmod(0o600)
    Path(spec.path).write_bytes(Path(spec.path).read_bytes() + b" ")
    document = ok(cli(sandbox, world, "status", "--json"))
    assert {t["attestation"] for t in document["tasks"]} == {"invalid"}
    text = cli(sandbox, world, "status").stdout
    assert "Canonical spec FAILS verification" in text


# -- modify -----------------------------------------------------------------------------------


def test_modify_task_actions_print_one_json_object(sandbox: Sandbox, world: RuntimeWorld) -> None:
    task_json = json.dumps({"id": "extra", "title": "Extra", "agent": "backend", "depends": []})
    document = ok(modify(sandbox, world, "add_task", "--task-json", task_json))
    assert document == {
        "squadId": world.squad_id,
        "action": "add_task",
        "taskId": "extra",
        "result": f"Task 'extra' added to squad '{world.squad_id}' (pending).",
    }
    for depends, expected in (("design,docs", ("design", "docs")), ("", ())):
        document = ok(
            modify(sandbox, world, "set_dependencies", "--task-id", "extra", "--depends", depends)
        )
        assert set(document) == {"squadId", "action", "taskId", "result"}
        assert world.task("extra").depends == expected
    for action in ("pause_task", "resume_task", "cancel_task"):
        document = ok(modify(sandbox, world, action, "--task-id", "extra"))
        assert document["action"] == action
    assert world.task("extra").status is TaskStatus.CANCELLED


def test_modify_squad_actions_have_no_task_id(sandbox: Sandbox, world: RuntimeWorld) -> None:
    for action, status in (("pause", "paused"), ("resume", "running"), ("cancel", "failed")):
        document = ok(modify(sandbox, world, action))
        assert set(document) == {"squadId", "action", "result"}
        assert document["action"] == action
        assert squad_status(world) == SquadStatus(status)


def test_modify_refusals_exit_1_with_a_coded_error(sandbox: Sandbox, world: RuntimeWorld) -> None:
    squad = world.squad_id
    message = error(
        modify(sandbox, world, "complete_task", "--task-id", "design"), "ATTESTATION_INVALID"
    )
    assert message.startswith("cannot complete: ")
    assert world.task("design").status is TaskStatus.PENDING
    error(modify(sandbox, world, "cancel_task", "--task-id", "design"), "OPERATION_REFUSED")
    error(
        modify(sandbox, world, "set_dependencies", "--task-id", "design", "--depends", "qa"),
        "DEPENDENCY_CYCLE",
    )
    error(modify(sandbox, world, "pause_task", "--task-id", "ghost"), "TASK_NOT_FOUND")
    error(cli(sandbox, world, "modify", "no-such-squad", "pause", "--json"), "SQUAD_NOT_FOUND")
    text = cli(sandbox, world, "modify", squad, "pause_task", "--task-id", "ghost")
    assert text.returncode == 1
    assert "TASK_NOT_FOUND" in text.stderr


@pytest.mark.parametrize(
    "arguments",
    [
        ["pause_task"],
        ["teleport"],
        ["pause", "--task-id", "design"],
        ["add_task"],
        ["cancel_task", "--task-id", "qa", "--output", "x"],
        ["set_dependencies", "--task-id", "qa"],
        ["set_dependencies", "--task-id", "qa", "--depends", "build,,docs"],
        ["pause", "--task-json", "{}"],
    ],
)
def test_modify_usage_errors_exit_2(
    sandbox: Sandbox, world: RuntimeWorld, arguments: list[str]
) -> None:
    before = squad_files(world)
    message = error(modify(sandbox, world, *arguments), "USAGE", exit_code=2)
    assert message.startswith("pi-squad modify: ")
    assert squad_files(world) == before


@pytest.mark.parametrize(
    ("task_json", "complaint"),
    [
        ('{"id":"x","title":"t","agent":"backend","id":"y"}', "duplicate object key 'id'"),
        ("[1]", "not a JSON object"),
        *((json.dumps(task), complaint) for task, complaint in BAD_NEW_TASKS),
    ],
)
def test_add_task_json_is_decoded_strictly(
    sandbox: Sandbox, world: RuntimeWorld, task_json: str, complaint: str
) -> None:
    message = error(
        modify(sandbox, world, "add_task", "--task-json", task_json), "TASK_INPUT_INVALID"
    )
    assert message.startswith("--task-json: ")
    assert complaint in message
    assert "x" not in world.store.snapshot(world.squad_id).tasks


def test_a_modify_from_another_process_is_picked_up_by_a_running_scheduler(
    sandbox: Sandbox, world: RuntimeWorld
) -> None:
    scheduler = started(world)
    child = world.runtime.latest("design")
    ok(modify(sandbox, world, "pause_task", "--task-id", "design"))
    scheduler.reconcile()
    assert child.killed
    ok(modify(sandbox, world, "resume_task", "--task-id", "design"))
    scheduler.reconcile()
    assert world.runtime.live_task_ids() == ["design"]
    finish(world, scheduler, "design")
    assert world.task("design").status is TaskStatus.DONE


# -- review -----------------------------------------------------------------------------------


def test_review_pass_prints_one_json_object_and_accepts_the_squad(
    sandbox: Sandbox, world: RuntimeWorld
) -> None:
    run_to_review(world)
    document = ok(
        cli(sandbox, world, "review", world.squad_id, "--verdict", "pass", *EVIDENCE_ARGS, "--json")
    )
    assert set(document) == {"squadId", "verdict", "status", "review", "result"}
    assert document["verdict"] == "pass"
    assert document["status"] == "done"
    assert document["review"]["status"] == "passed"
    assert document["review"]["issues"] == []
    assert squad_status(world) is SquadStatus.DONE


def test_review_fail_keeps_the_squad_in_review(sandbox: Sandbox, world: RuntimeWorld) -> None:
    run_to_review(world)
    document = ok(
        cli(
            sandbox,
            world,
            "review",
            world.squad_id,
            "--verdict",
            "fail",
            *EVIDENCE_ARGS,
            "--issue",
            "the parser breaks",
            "--json",
        )
    )
    assert document["status"] == "review"
    assert document["review"]["status"] == "failed"
    assert document["review"]["issues"] == ["the parser breaks"]
    again = cli(
        sandbox, world, "review", world.squad_id, "--verdict", "pass", *EVIDENCE_ARGS, "--json"
    )
    assert "cannot be overwritten" in error(again, "OPERATION_REFUSED")


def test_review_refusals_and_usage_errors(sandbox: Sandbox, world: RuntimeWorld) -> None:
    squad = world.squad_id
    error(
        cli(sandbox, world, "review", squad, "--verdict", "pass", *EVIDENCE_ARGS, "--json"),
        "OPERATION_REFUSED",
    )
    run_to_review(world)
    error(cli(sandbox, world, "review", squad, "--verdict", "pass", "--json"), "REVIEW_INVALID")
    error(
        cli(sandbox, world, "review", squad, "--verdict", "fail", *EVIDENCE_ARGS, "--json"),
        "REVIEW_INVALID",
    )
    error(
        cli(sandbox, world, "review", squad, "--verdict", "great", *EVIDENCE_ARGS, "--json"),
        "USAGE",
        exit_code=2,
    )
    error(cli(sandbox, world, "review", squad, "--json"), "USAGE", exit_code=2)
    assert squad_status(world) is SquadStatus.REVIEW


def test_review_of_a_tampered_squad_is_rejected_and_reopens_work(
    sandbox: Sandbox, world: RuntimeWorld
) -> None:
    run_to_review(world)
    world.attestation_path("build").unlink()
    message = error(
        cli(
            sandbox, world, "review", world.squad_id, "--verdict", "pass", *EVIDENCE_ARGS, "--json"
        ),
        "ATTESTATION_INVALID",
    )
    assert "task(s): build" in message
    assert "Work was reopened." in message
    assert squad_status(world) is SquadStatus.RUNNING
    assert world.task("build").status is TaskStatus.PENDING
    assert world.task("qa").status is TaskStatus.BLOCKED


# -- the trust boundary through the command line -----------------------------------------------


def test_verify_and_status_say_plainly_when_children_ran_without_isolation(
    sandbox: Sandbox, world: RuntimeWorld
) -> None:
    with world.store.transaction(world.squad_id) as tx:
        tx.put_squad(attrs.evolve(tx.squad, isolation="none"))
    document = ok(cli(sandbox, world, "verify", world.squad_id, "--json"))
    assert document["isolation"]["mode"] == "none"
    assert "a child could have written squad records" in document["isolation"]["statement"]
    text = cli(sandbox, world, "verify", world.squad_id).stdout
    assert "isolation: none: at least one child ran without kernel write isolation" in text
    status = cli(sandbox, world, "status", world.squad_id).stdout
    assert "Isolation: none: at least one child ran without kernel write isolation" in status
    # ``report`` exits 1 here (nothing is attested yet), but says the same in both forms.
    report = cli(sandbox, world, "report", world.squad_id, "--json").json()
    assert report["isolation"]["mode"] == "none"
    assert "a child could have written squad records" in report["isolation"]["statement"]
    markdown = cli(sandbox, world, "report", world.squad_id).stdout
    assert (
        "- Isolation: none: at least one child ran without kernel write isolation, so a child "
        "could have written squad records" in markdown
    )


def test_verify_status_and_report_show_the_weakest_layers_any_child_ran_under(
    sandbox: Sandbox, world: RuntimeWorld
) -> None:
    weakest = "landlock(ABI 4, unscoped signals)"
    with world.store.transaction(world.squad_id) as tx:
        tx.put_squad(attrs.evolve(tx.squad, isolation="landlock", isolation_layers=weakest))
    said = f"layers that held for every child: {weakest}"
    for args in (("verify",), ("status",), ("report",)):
        document = cli(sandbox, world, *args, world.squad_id, "--json").json()
        assert document["isolation"]["mode"] == "landlock", args
        assert document["isolation"]["layers"] == weakest, args
        assert said in document["isolation"]["statement"], args
    for args, prefix in ((("verify",), "isolation: "), (("status",), "Isolation: "),
                         (("report",), "- Isolation: ")):  # fmt: skip
        text = cli(sandbox, world, *args, world.squad_id).stdout
        (line,) = [line for line in text.splitlines() if line.startswith(prefix)]
        assert said in line, args
        assert "a child could signal processes outside its own tree" in line, args


@pytest.mark.parametrize(
    "arguments",
    [
        ("status", "{squad}"),
        ("verify", "{squad}"),
        ("report", "{squad}"),
        ("modify", "{squad}", "complete_task", "--task-id", "docs"),
        ("modify", "{squad}", "pause"),
        ("run", "--squad", "{squad}"),
    ],
)
def test_a_deleted_pinned_task_fails_every_command_closed_with_one_coded_error(
    sandbox: Sandbox, world: RuntimeWorld, arguments: tuple[str, ...]
) -> None:
    squad_dir = Path(world.root, world.squad_id)
    shutil.rmtree(squad_dir / ".records" / "build")
    argv = [a.format(squad=world.squad_id) for a in arguments]
    message = error(cli(sandbox, world, *argv, "--json"), "SQUAD_INTEGRITY")
    assert "task 'build'" in message
    assert f"pi-squad verify {world.squad_id}" in message, "says what to type next"
    text = cli(sandbox, world, *argv)
    assert text.returncode == 1
    assert text.stderr.startswith("pi-squad: SQUAD_INTEGRITY: ")
    assert "Traceback" not in text.stderr


def test_a_command_the_kernel_refuses_is_one_coded_error_not_a_traceback(
    sandbox: Sandbox, world: RuntimeWorld
) -> None:
    """What a confined child gets from ``pi-squad modify``: squad records are read-only to it
    (real Landlock; we run as root, so file modes would not refuse anything)."""
    support = probe_landlock()
    if support.mode != "landlock" or support.abi is None:
        pytest.skip(f"no Landlock here: {support.reason}")
    argv = LandlockIsolation(abi=support.abi).confine(
        [*CLI, "modify", world.squad_id, "pause_task", "--task-id", "build", "--json"],
        writable=["/dev/null"],
    )
    completed = subprocess.run(
        argv,
        cwd=sandbox.cwd,
        env=sandbox.environment(root=world.root),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 1, completed.stderr
    assert "Traceback" not in completed.stderr
    document = json.loads(completed.stdout)
    assert document["error"]["code"] == "IO_FAILED"
    assert "Permission denied" in document["error"]["message"]
    assert world.task("build").status is not TaskStatus.SUSPENDED, "nothing changed"


def test_run_from_a_project_that_holds_the_squad_root_is_refused_before_publishing(
    tmp_path: Path,
) -> None:
    """With Landlock every child may write its project; a project holding the squad root
    would give every child every squad record, so nothing is published at all."""
    support = probe_landlock()
    if support.mode != "landlock":
        pytest.skip(f"no Landlock here: {support.reason}")
    sandbox = Sandbox.create(tmp_path)
    spec = sandbox.write_spec(spec_document())
    root = sandbox.cwd / ".pi" / "squad"  # inside the project
    arguments = ["run", *create_arguments(spec)[1:], "--cwd", str(sandbox.cwd)]
    run = run_cli(sandbox, arguments, root=str(root))
    message = error(run, "ISOLATION_UNSAFE")
    assert message.startswith("nothing was published: the write grant")
    assert "contains the squad root" in message
    assert not root.exists() or list(root.iterdir()) == []
