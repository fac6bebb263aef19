"""What ``pi-squad report`` writes: outputs never shortened (with ``--out`` long ones go beside the
report), the review history, nothing but reads, and refusals that say what to do."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from domain.squad.model import SquadStatus
from entrypoints.report_outputs import INLINE_OUTPUT_BYTES
from tests.integration.operator_support import (
    demo_like_world,
    file_states,
    finish_task,
    finished_world,
    run_operator_cli,
    set_squad_status,
    start_task,
)
from tests.integration.report_support import LONG_OUTPUT, REFUSED, USAGE, report_json


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
