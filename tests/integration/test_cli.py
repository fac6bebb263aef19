"""The real ``pi-squad`` command line, in a subprocess with its own home, root and cwd: what
``validate``, ``create`` and ``chunks`` print as JSON and for people, relative spec files, usage
errors, and the installed console script."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

from domain.chunks import CHUNK_BYTES
from domain.errors import ErrorCode
from tests.builders import encode, sha, spec_document, task
from tests.integration.cli_spec_support import (
    CLI_USAGE,
    SECRET,
    run_both_ways,
    secret_spec,
    validate_arguments,
)
from tests.integration.cli_support import Sandbox, create_arguments, listed_squads, run_cli


def test_validate_json_is_valid_spec_and_warnings_only(tmp_path: Path) -> None:
    sandbox = Sandbox.create(tmp_path)
    spec = sandbox.write_spec(secret_spec())
    run = run_cli(sandbox, [*validate_arguments(spec, spec.sha256), "--json"])
    assert (run.returncode, run.stderr) == (0, "")
    document = run.json()
    assert document == {
        "valid": True,
        "spec": {"sha256": spec.sha256, "bytes": len(spec.data), "chunkCount": 1},
        "warnings": document["warnings"],
    }
    assert isinstance(document["warnings"], list)
    assert all(isinstance(w, str) and SECRET not in w for w in document["warnings"])


def test_validate_reports_stylistic_plan_rules_as_warnings(tmp_path: Path) -> None:
    sandbox = Sandbox.create(tmp_path)
    document = secret_spec()
    document["tasks"][0]["description"] = "Build it."  # names no way to verify the work
    spec = sandbox.write_spec(document)
    run = run_cli(sandbox, [*validate_arguments(spec, spec.sha256), "--json"])
    assert run.returncode == 0
    assert any("build" in warning for warning in run.json()["warnings"])


def test_create_json_has_the_squad_spec_and_task_ids_in_spec_order(tmp_path: Path) -> None:
    sandbox = Sandbox.create(tmp_path)
    tasks = [task("zeta"), task("alpha", depends=["zeta"]), task("mid", agent="qa")]
    spec = sandbox.write_spec(spec_document(goal="Order matters", tasks=tasks))
    run = run_cli(sandbox, create_arguments(spec))
    assert (run.returncode, run.stderr) == (0, "")
    document = run.json()
    squad_dir = str(sandbox.root / "order-matters")
    assert document == {
        "squadId": "order-matters",
        "squadDir": squad_dir,
        "spec": {
            "schemaVersion": 1,
            "sha256": spec.sha256,
            "bytes": len(spec.data),
            "path": os.path.join(squad_dir, "spec", "spec.v1.json"),
            "chunkBytes": CHUNK_BYTES,
            "chunkCount": 1,
        },
        "tasks": ["zeta", "alpha", "mid"],
    }
    assert Path(document["spec"]["path"]).read_bytes() == spec.data
    assert [s.id for s in listed_squads(sandbox.root)] == ["order-matters"]


def test_chunks_json_describes_every_chunk_exactly(tmp_path: Path) -> None:
    sandbox = Sandbox.create(tmp_path)
    data = ("aé€🙂" * 8000).encode()  # 80,000 bytes, characters of every width
    target = sandbox.cwd / "text.txt"
    target.write_bytes(data)
    run = run_cli(sandbox, ["chunks", str(target), "--json"])
    assert (run.returncode, run.stderr) == (0, "")
    document = run.json()
    assert set(document) == {"bytes", "sha256", "chunkBytes", "chunkCount", "chunks"}
    assert (document["bytes"], document["sha256"]) == (len(data), sha(data))
    assert document["chunkBytes"] == CHUNK_BYTES
    chunks = document["chunks"]
    assert document["chunkCount"] == len(chunks) == 3
    position = 0
    for index, chunk in enumerate(chunks):
        assert set(chunk) == {"index", "startByte", "endByteExclusive", "bytes", "sha256"}
        assert (chunk["index"], chunk["startByte"]) == (index, position)
        piece = data[chunk["startByte"] : chunk["endByteExclusive"]]
        assert chunk["bytes"] == len(piece) <= CHUNK_BYTES
        assert chunk["sha256"] == hashlib.sha256(piece).hexdigest()
        piece.decode("utf-8")  # code-point aligned
        position = chunk["endByteExclusive"]
    assert position == len(data)


def test_human_outputs_are_lines_for_people(tmp_path: Path) -> None:
    sandbox = Sandbox.create(tmp_path)
    spec = sandbox.write_spec(secret_spec())
    validated = run_cli(sandbox, validate_arguments(spec, spec.sha256))
    created = run_cli(sandbox, create_arguments(spec)[:-1])
    assert (validated.returncode, created.returncode) == (0, 0)
    assert validated.stdout.startswith(f"valid: {spec.path}\n")
    assert spec.sha256 in validated.stdout
    assert created.stdout.startswith('Squad "ship-it-zebra-quartz-7731" published with 2 tasks.')


def test_a_relative_spec_file_resolves_against_cwd_option(tmp_path: Path) -> None:
    sandbox = Sandbox.create(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    data = encode(secret_spec())
    (elsewhere / "relative.json").write_bytes(data)
    arguments = ["--spec-file", "relative.json", "--spec-sha256", sha(data), "--json"]

    with_cwd = run_cli(sandbox, ["validate", *arguments, "--cwd", str(elsewhere)])
    without = run_cli(sandbox, ["validate", *arguments])  # the process cwd has no such file

    assert with_cwd.returncode == 0, with_cwd
    assert without.error_code() == ErrorCode.SPEC_UNSTABLE


def test_a_relative_spec_file_without_cwd_option_resolves_against_the_process_cwd(
    tmp_path: Path,
) -> None:
    sandbox = Sandbox.create(tmp_path)
    spec = sandbox.write_spec(secret_spec(), name="here.json")
    run = run_cli(sandbox, ["validate", "--spec-file", "here.json", "--spec-sha256", spec.sha256])
    assert run.returncode == 0, run


USAGE_ERRORS = {
    "no-command": [],
    "unknown-command": ["explode"],
    "missing-hash": ["validate", "--spec-file", "spec.json"],
    "missing-spec-file": ["create", "--spec-sha256", "0" * 64],
    "missing-chunks-path": ["chunks"],
    "unknown-option": ["validate", "--spec-file", "x", "--spec-sha256", "0" * 64, "--fast"],
}


@pytest.mark.parametrize("name", USAGE_ERRORS)
def test_a_usage_error_exits_2_and_with_json_is_one_usage_error_object(
    tmp_path: Path, name: str
) -> None:
    sandbox = Sandbox.create(tmp_path)
    as_json, as_text = run_both_ways(sandbox, USAGE_ERRORS[name])

    assert as_json.returncode == CLI_USAGE
    assert as_json.error_code() == ErrorCode.USAGE
    assert as_json.stderr == ""
    assert as_text.returncode == CLI_USAGE
    assert as_text.stdout == ""
    assert as_text.stderr.startswith("pi-squad: USAGE: pi-squad")
    assert as_text.stderr.count("\n") == 1, "one line"
    assert "Traceback" not in as_text.stderr


def test_the_installed_pi_squad_console_script_runs_the_same_cli(tmp_path: Path) -> None:
    script = shutil.which("pi-squad", path=sysconfig.get_path("scripts"))
    if script is None:
        pytest.skip("the pi-squad console script is not installed beside this interpreter")
    sandbox = Sandbox.create(tmp_path)
    spec = sandbox.write_spec(secret_spec())
    completed = subprocess.run(
        [script, *validate_arguments(spec, spec.sha256), "--json"],
        cwd=sandbox.cwd,
        env=sandbox.environment(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith('{"valid":true,')
