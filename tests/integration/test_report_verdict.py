"""``pi-squad report``: the evidence pack, in a subprocess over a real squad root, and its verdict.

The verdict is computed at report time with the ``AttestationAuditor``: one tampered byte in
one attestation turns it to FAIL (JSON ``ok: false``, exit 1, the Markdown verdict line red on
a terminal); a changed canonical spec or an unfinished task is no PASS either.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.cli_support import CLI
from tests.integration.operator_support import (
    SPEC_TEXT_MARKERS,
    PtyProcess,
    cli_environment,
    demo_like_world,
    finish_task,
    finished_world,
    run_operator_cli,
    start_task,
)
from tests.integration.ops_support import publish_legacy
from tests.integration.report_support import REFUSED, report_json, tamper_one_byte
from tests.pi_runtime_support import installed_pi_runtime
from tests.runtime_world import RuntimeWorld


def test_the_report_of_a_finished_squad_verifies(tmp_path: Path) -> None:
    world = finished_world(tmp_path)
    spec = world.published.squad.spec if world.published else None
    assert spec is not None

    code, document = report_json(world)

    assert code == 0
    assert document["squadId"] == world.squad_id
    assert document["status"] == "review"
    canonical_bytes = Path(spec.path).read_bytes()
    assert document["spec"] == {
        "path": spec.path,
        "bytes": len(canonical_bytes),
        "sha256": hashlib.sha256(canonical_bytes).hexdigest(),
        "chunkBytes": 32768,
        "chunkCount": spec.chunk_count,
        "canonical": {"ok": True, "reason": None},
    }
    assert [t["taskId"] for t in document["tasks"]] == ["build", "design", "qa"]
    for task in document["tasks"]:
        assert task["status"] == "done"
        assert task["title"] is None  # spec content in file mode
        assert task["output"] == {"inline": f"{task['taskId']} finished; tests pass.\n"}
        attestation = task["attestation"]
        assert attestation["status"] == "valid"
        assert attestation["chunkCount"] == spec.chunk_count
        assert attestation["toolCallIds"] == [
            f"{task['taskId']}-{i}" for i in range(spec.chunk_count)
        ]
        assert attestation["firstDeliveredAt"] <= attestation["lastDeliveredAt"]
        assert attestation["lastDeliveredAt"] <= attestation["completedAt"]
    assert document["reviews"][0]["status"] == "pending"
    assert document["verdict"] == {"ok": True, "requiredAttestations": 3, "problems": []}
    for marker in SPEC_TEXT_MARKERS:
        assert marker not in json.dumps(document, ensure_ascii=False)


def test_the_markdown_report_ends_with_a_pass_line(tmp_path: Path) -> None:
    world = finished_world(tmp_path)

    run = run_operator_cli(world, ["report", world.squad_id])

    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[-1] == (
        "Attestation audit: PASS: all 3 required attestations verify now against the canonical spec"
    )
    assert f"# Evidence report: squad {world.squad_id}" in lines
    assert any(line.startswith("- SHA-256: ") for line in lines)
    assert "  - 0: `design-0`" in lines
    for task_id in ("build", "design", "qa"):
        assert f"### {task_id}" in lines
        assert f"{task_id} finished; tests pass." in lines
    for marker in SPEC_TEXT_MARKERS:
        assert marker not in run.stdout


def test_one_tampered_attestation_byte_fails_the_verdict(tmp_path: Path) -> None:
    world = finished_world(tmp_path)
    tamper_one_byte(world.attestation_path("design"))

    code, document = report_json(world)
    markdown = run_operator_cli(world, ["report", world.squad_id])

    assert code == REFUSED
    assert document["verdict"]["ok"] is False
    [problem] = document["verdict"]["problems"]
    assert problem.startswith("task 'design' (done): attestation invalid: ")
    design = next(t for t in document["tasks"] if t["taskId"] == "design")
    assert design["attestation"]["status"] == "invalid"
    assert design["attestation"]["toolCallIds"] == []  # an invalid record proves nothing
    assert markdown.returncode == REFUSED
    last = markdown.stdout.splitlines()[-1]
    assert last.startswith(
        "Attestation audit: FAIL: 1 problem: task 'design' (done): attestation invalid"
    )


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_on_a_terminal_the_verdict_line_is_red_when_failing_and_green_when_passing(
    tmp_path: Path,
) -> None:
    world = finished_world(tmp_path)

    def verdict_on_terminal() -> tuple[int, str]:
        terminal = PtyProcess(
            ["report", world.squad_id], env=cli_environment(world), cwd=world.base
        )
        try:
            code = terminal.wait()
        finally:
            terminal.close()
        return code, terminal.raw()

    code, raw = verdict_on_terminal()
    assert code == 0
    assert "\x1b[1;32mAttestation audit: PASS" in raw

    tamper_one_byte(world.attestation_path("qa"))
    code, raw = verdict_on_terminal()
    assert code == REFUSED
    assert "\x1b[1;31mAttestation audit: FAIL: 1 problem: task 'qa'" in raw


def test_a_changed_canonical_spec_fails_every_required_attestation(tmp_path: Path) -> None:
    world = finished_world(tmp_path)
    spec = world.published.squad.spec if world.published else None
    assert spec is not None
    canonical = Path(spec.path)
    os.chmod(canonical, 0o600)
    data = bytearray(canonical.read_bytes())
    data[10] ^= 0x01
    canonical.write_bytes(bytes(data))

    code, document = report_json(world)

    assert code == REFUSED
    assert document["spec"]["canonical"]["ok"] is False
    problems = document["verdict"]["problems"]
    assert problems[0].startswith("canonical spec fails verification: ")
    assert len(problems) == 4  # the canonical file, then every task that needs it


def test_an_unfinished_task_is_a_required_attestation_not_yet_verified(tmp_path: Path) -> None:
    world = demo_like_world(tmp_path)
    finish_task(world, "design", output="design done\n")
    start_task(world, "build")

    code, document = report_json(world)

    assert code == REFUSED
    assert document["verdict"]["problems"] == [
        "task 'build' (in_progress): attestation not started",
        "task 'qa' (blocked): attestation not started",
    ]
    build = next(t for t in document["tasks"] if t["taskId"] == "build")
    assert build["output"] is None
    assert build["attestation"]["chunksCommitted"] == 0


@pytest.mark.realpi
@pytest.mark.slow
def test_the_report_of_the_real_demo_verifies_and_one_tampered_byte_fails_it(
    tmp_path: Path,
) -> None:
    installed_pi_runtime()
    workspace = tmp_path / "demo"
    env = {k: v for k, v in os.environ.items() if k not in {"PI_SQUAD_ROOT", "PI_CODING_AGENT_DIR"}}
    env["HOME"] = str(tmp_path / "home")
    demo = subprocess.run(
        [*CLI, "demo", "--workspace", str(workspace), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert demo.returncode == 0, demo.stdout + demo.stderr
    squad_id = json.loads(demo.stdout)["squadId"]
    env["PI_SQUAD_ROOT"] = str(workspace / "root")

    def report(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*CLI, "report", squad_id, *extra],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    passing = report("--json")
    assert passing.returncode == 0, passing.stdout + passing.stderr
    document = json.loads(passing.stdout)
    assert document["verdict"]["ok"] is True
    assert all(t["attestation"]["status"] == "valid" for t in document["tasks"])
    assert all(t["attestation"]["toolCallIds"] for t in document["tasks"])

    tamper_one_byte(workspace / "root" / squad_id / "qa" / "spec-read-attestation.json")
    failing_json, failing_md = report("--json"), report()

    assert failing_json.returncode == REFUSED
    assert json.loads(failing_json.stdout)["verdict"]["ok"] is False
    assert failing_md.returncode == REFUSED
    assert failing_md.stdout.splitlines()[-1].startswith(
        "Attestation audit: FAIL: 1 problem: task 'qa'"
    )
    shutil.rmtree(workspace, ignore_errors=True)


def test_a_legacy_squad_needs_no_attestation_and_shows_its_titles(tmp_path: Path) -> None:
    world = RuntimeWorld(base=tmp_path, spec=b"")
    squad_id = publish_legacy(world)

    run = run_operator_cli(world, ["report", squad_id, "--json"])
    markdown = run_operator_cli(world, ["report", squad_id])

    assert run.returncode == 0, run.stderr
    document = run.json()
    assert document["spec"] is None
    assert [(t["taskId"], t["title"]) for t in document["tasks"]] == [
        ("api", "Build the API"),
        ("ui", "Build the UI"),
    ]
    assert {t["attestation"]["status"] for t in document["tasks"]} == {"not_required"}
    assert {t["attestationRequired"] for t in document["tasks"]} == {False}
    assert document["verdict"] == {"ok": True, "requiredAttestations": 0, "problems": []}
    assert markdown.returncode == 0
    assert "- Title: Build the API" in markdown.stdout.splitlines()
    assert markdown.stdout.splitlines()[-1] == (
        "Attestation audit: PASS: legacy squad, no attestation is required"
    )
