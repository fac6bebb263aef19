"""``pi-squad report``: the evidence pack, in a subprocess over a real squad root.

The verdict is computed at report time with the ``AttestationAuditor``: one tampered byte in
one attestation turns it to FAIL (JSON ``ok: false``, exit 1, the Markdown verdict line red on
a terminal). Outputs are never shortened; with ``--out`` long ones go beside the report.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from domain.squad.model import SquadStatus
from entrypoints.report_outputs import INLINE_OUTPUT_BYTES
from tests.integration.cli_support import CLI
from tests.integration.operator_support import (
    PtyProcess,
    cli_environment,
    demo_like_world,
    file_states,
    finish_task,
    finished_world,
    run_operator_cli,
    set_squad_status,
    start_task,
)
from tests.integration.ops_support import publish_legacy
from tests.pi_runtime_support import installed_pi_runtime
from tests.runtime_world import RuntimeWorld

REFUSED = 1
USAGE = 2
# multibyte text and backtick runs: a fence must not end early, a byte count must be of UTF-8
LONG_OUTPUT = "".join(
    f"line {i:05d}: résumé 東京 🙂 ``` ```` done\n" for i in range(INLINE_OUTPUT_BYTES // 24)
)
SPEC_TEXT_MARKERS = ("verify the spec", "Task design", "Task build", "Ship a")


def tamper_one_byte(path: Path) -> None:
    """Change one hex digit of the first chunk's hash in an attestation."""
    data = bytearray(path.read_bytes())
    key = data.index(b'"sha256": "', data.index(b'"chunks"')) + len(b'"sha256": "')
    data[key] = ord("0") if data[key] != ord("0") else ord("1")
    path.write_bytes(bytes(data))


def report_json(world: RuntimeWorld, *extra: str) -> tuple[int, dict[str, Any]]:
    run = run_operator_cli(world, ["report", world.squad_id, "--json", *extra])
    assert run.stderr == "", run.stderr
    return run.returncode, run.json()


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
        "task 'build' (in_progress): attestation missing, 5 of 5 chunks not read",
        "task 'qa' (blocked): attestation missing, 5 of 5 chunks not read",
    ]
    build = next(t for t in document["tasks"] if t["taskId"] == "build")
    assert build["output"] is None
    assert build["attestation"]["chunksCommitted"] == 0


def test_long_outputs_are_written_whole_beside_the_report(tmp_path: Path) -> None:
    world = finished_world(tmp_path, outputs={"design": LONG_OUTPUT})
    out_dir = tmp_path / "evidence"
    out_dir.mkdir()
    data = LONG_OUTPUT.encode("utf-8")
    assert len(data) > INLINE_OUTPUT_BYTES
    digest = hashlib.sha256(data).hexdigest()
    before = file_states(Path(world.root))

    run = run_operator_cli(world, ["report", world.squad_id, "--out", str(out_dir / "pack.md")])

    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[0] == str(out_dir / "pack.md")
    side = out_dir / "pack.outputs" / "design.txt"
    assert side.read_bytes() == data
    markdown = (out_dir / "pack.md").read_text(encoding="utf-8")
    assert (
        f"Output: {len(data)} bytes, SHA-256 {digest}, written whole to `pack.outputs/design.txt`"
    ) in markdown
    assert "line 00000: résumé" not in markdown  # referenced, not inlined
    assert "build finished; tests pass.\n" in markdown  # short outputs stay inline, whole
    assert markdown.rstrip("\n").splitlines()[-1].startswith("Attestation audit: PASS")
    assert sorted(p.name for p in out_dir.iterdir()) == ["pack.md", "pack.outputs"]
    assert file_states(Path(world.root)) == before

    run = run_operator_cli(
        world,
        [
            "report",
            world.squad_id,
            "--format",
            "json",
            "--out",
            str(out_dir / "pack.json"),
            "--json",
        ],
    )

    assert run.returncode == 0, run.stderr
    printed = run.json()
    assert printed["path"] == str(out_dir / "pack.json")
    assert printed["verdict"] == {"ok": True, "problems": []}
    assert printed["outputs"] == [
        {"path": str(out_dir / "pack.outputs" / "design.txt"), "sha256": digest, "bytes": len(data)}
    ]
    document = json.loads((out_dir / "pack.json").read_text(encoding="utf-8"))
    tasks = {t["taskId"]: t for t in document["tasks"]}
    assert tasks["design"]["output"] == {
        "path": "pack.outputs/design.txt",
        "sha256": digest,
        "bytes": len(data),
    }
    assert tasks["build"]["output"] == {"inline": "build finished; tests pass.\n"}
    assert sorted(p.name for p in out_dir.iterdir()) == ["pack.json", "pack.md", "pack.outputs"]


def test_without_out_every_output_is_inline_and_whole(tmp_path: Path) -> None:
    world = finished_world(tmp_path, outputs={"design": LONG_OUTPUT})

    code, document = report_json(world)
    markdown = run_operator_cli(world, ["report", world.squad_id])

    assert code == 0
    design = next(t for t in document["tasks"] if t["taskId"] == "design")
    assert design["output"] == {"inline": LONG_OUTPUT}
    assert LONG_OUTPUT in markdown.stdout
    # the fence is longer than any backtick run inside the output
    assert "`````text" in markdown.stdout.splitlines()


def test_the_report_shows_the_review_history(tmp_path: Path) -> None:
    world = finished_world(tmp_path)
    review = run_operator_cli(
        world,
        [
            "review",
            world.squad_id,
            "--verdict",
            "pass",
            "--contract-check",
            "every requirement has a test",
            "--diff-review",
            "small, focused diff",
            "--verification",
            "pytest: 12 passed",
            "--integration",
            "demo ran end to end",
        ],
    )
    assert review.returncode == 0, review.stderr

    code, document = report_json(world)
    markdown = run_operator_cli(world, ["report", world.squad_id]).stdout

    assert code == 0
    assert document["status"] == "done"
    [recorded] = document["reviews"]
    assert recorded["status"] == "passed"
    assert recorded["verdict"] == "pass"
    assert recorded["contractChecks"] == ["every requirement has a test"]
    assert recorded["verificationEvidence"] == ["pytest: 12 passed"]
    assert "### Review 1 (current): passed, verdict pass" in markdown
    assert "  - pytest: 12 passed" in markdown


def test_report_reads_only(tmp_path: Path) -> None:
    world = demo_like_world(tmp_path)
    finish_task(world, "design", output="design done\n")
    start_task(world, "build")
    set_squad_status(world, SquadStatus.RUNNING)
    before = file_states(Path(world.root))

    for arguments in (["--json"], [], ["--format", "json"]):
        run_operator_cli(world, ["report", world.squad_id, *arguments])

    assert file_states(Path(world.root)) == before


def test_report_refusals_say_what_to_do(tmp_path: Path) -> None:
    world = finished_world(tmp_path)

    usage = run_operator_cli(world, ["report", world.squad_id, "--format", "md", "--json"])
    missing_dir = run_operator_cli(
        world, ["report", world.squad_id, "--out", str(tmp_path / "no-such-dir" / "r.md")]
    )

    assert usage.returncode == USAGE
    assert usage.error_code() == "USAGE"
    assert "use --format json, or --out FILE for Markdown" in usage.json()["error"]["message"]
    assert missing_dir.returncode == REFUSED
    assert missing_dir.stderr == (
        f"pi-squad: OPERATION_REFUSED: --out {tmp_path / 'no-such-dir' / 'r.md'}: the directory "
        f"{tmp_path / 'no-such-dir'} does not exist; create it first or choose another --out "
        "path\n"
    )


# -- the real demo -------------------------------------------------------------------------------


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
