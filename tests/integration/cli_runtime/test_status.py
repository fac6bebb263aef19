"""``pi-squad status`` in a subprocess: the JSON of each task with its attestation and chunks, the
text of file and legacy squads, read-only, review and a changed canonical spec."""

from __future__ import annotations

import sys
from pathlib import Path

from application.squads.operations import Action, NewTask, SquadOperations
from tests.integration.cli_runtime.support import cli, ok, read_chunks
from tests.integration.cli_support import Sandbox, run_cli, tree_snapshot
from tests.integration.ops_support import publish_legacy, published, run_to_review, status_reader
from tests.runtime_world import RuntimeWorld
from tests.squads import multi_chunk_spec


def test_status_json_lists_each_task_with_its_attestation_and_chunks(
    sandbox: Sandbox, world: RuntimeWorld
) -> None:
    world.attest("design", observed=True)
    document = ok(cli(sandbox, world, "status", world.squad_id, "--json"))
    assert set(document) == {
        "squadId", "status", "cancelled", "driven", "progress", "review", "isolation", "spec",
        "tasks",
    }  # fmt: skip
    assert document["cancelled"] is None, "no whole-squad cancel stands"
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
        "attestationState": "valid",
        "attestationText": "valid",
        "reason": None,
        "monitor": None,
    }
    assert tasks["build"]["attestation"] == "missing"
    assert tasks["build"]["chunksRead"] == 0
    assert (tasks["build"]["attestationState"], tasks["build"]["attestationText"]) == (
        "not started",
        "not started",
    )


def test_status_counts_partially_read_chunks(tmp_path: Path, sandbox: Sandbox) -> None:
    world = published(tmp_path / "multi", multi_chunk_spec(4))
    spec = world.store.snapshot(world.squad_id).squad.spec
    assert spec is not None
    assert spec.chunk_count >= 3
    read_chunks(world, "design", [spec.chunk_count - 1, 0])
    tasks = {t["taskId"]: t for t in ok(cli(sandbox, world, "status", "--json"))["tasks"]}
    assert tasks["design"]["attestation"] == "missing"
    assert tasks["design"]["chunksRead"] == 2
    assert tasks["design"]["attestationText"] == f"reading 2/{spec.chunk_count}"
    text = status_reader(world).status(world.squad_id).text()
    assert f"design (architect) [pending] attestation reading 2/{spec.chunk_count}" in text
    assert "invalid" not in text


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
    assert "· design (architect) [pending] attestation valid" in lines
    assert "◻ build (backend) [blocked] attestation not started blocked by: design" in lines
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


def test_status_advises_resume_first_when_a_task_is_suspended(
    sandbox: Sandbox, world: RuntimeWorld
) -> None:
    """``run --squad`` alone never resumes a suspended task (pause semantics): the advice names
    ``modify ... resume`` first."""
    running = cli(sandbox, world, "status").stdout
    assert f"continue it with: pi-squad run --squad {world.squad_id}\n" in running
    world.use_cases().operations().apply(world.squad_id, Action.PAUSE_TASK, task_id="design")
    text = cli(sandbox, world, "status").stdout
    assert (
        f"continue it with: pi-squad modify {world.squad_id} resume, then pi-squad run --squad "
        f"{world.squad_id}\n"
    ) in text


def test_a_read_the_parent_has_not_yet_seen_earned_is_reading_never_invalid(
    sandbox: Sandbox, world: RuntimeWorld
) -> None:
    """Issue 31's false alarm: the child's ledger holds a complete attestation, but the parent
    has not recorded the task's session or deliveries yet (just started, or suspended before
    its session was bound). Every face says it is reading; only settlement judges it."""
    world.attest("design")  # no live child: nothing the parent observed grounds it yet
    spec = world.store.snapshot(world.squad_id).squad.spec
    assert spec is not None
    count = spec.chunk_count
    design = {t["taskId"]: t for t in ok(cli(sandbox, world, "status", "--json"))["tasks"]}[
        "design"
    ]
    assert design["attestation"] == "invalid", "the auditor's verdict is kept as it was"
    assert (design["attestationState"], design["attestationText"]) == (
        "reading",
        f"reading {count}/{count}",
    )
    text = cli(sandbox, world, "status").stdout
    assert f"design (architect) [pending] attestation reading {count}/{count}" in text
    verify = cli(sandbox, world, "verify", world.squad_id)
    assert verify.returncode == 0, verify.stdout
    assert "invalid" not in text + verify.stdout
