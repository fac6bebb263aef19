"""The real ``pi-squad`` command line, in a subprocess with its own home, root and cwd.

Every error code of the foundation issue is reached through ``pi-squad validate --json`` (and
``PUBLISH_FAILED`` through ``create``): exit status 1, stdout exactly one JSON object
``{"error": {"code", "message"}}``, nothing on stderr, and no message quoting spec content.
Without ``--json`` the same refusal is one ``pi-squad: CODE: message`` line on stderr.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sysconfig
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import attrs
import pytest

from domain.chunks import CHUNK_BYTES
from domain.errors import ErrorCode
from domain.spec.limits import MAX_SPEC_BYTES
from tests.builders import artifact, encode, sha, spec_document, task
from tests.integration.cli_support import (
    CliRun,
    Sandbox,
    SpecFile,
    create_arguments,
    listed_squads,
    run_cli,
    tree_snapshot,
)

SECRET = "Zebra-Quartz-7731"  # placed in the goal and every description; must never be echoed
CLI_REFUSAL = 1
# The stable codes of the foundation issue (later issues add others).
FOUNDATION_CODES = {
    ErrorCode.SPEC_MALFORMED,
    ErrorCode.SPEC_HASH_MISMATCH,
    ErrorCode.SPEC_UNSTABLE,
    ErrorCode.SPEC_TOO_LARGE,
    ErrorCode.PLAN_INVALID,
    ErrorCode.ARTIFACT_PATH_INVALID,
    ErrorCode.ARTIFACT_MISSING,
    ErrorCode.ARTIFACT_UNSTABLE,
    ErrorCode.ARTIFACT_SIZE_MISMATCH,
    ErrorCode.ARTIFACT_HASH_MISMATCH,
    ErrorCode.PUBLISH_FAILED,
}
CLI_USAGE = 2


def secret_spec(**overrides: Any) -> dict[str, Any]:
    document = spec_document(
        goal=f"Ship it, {SECRET}",
        tasks=[
            task("build", description=f"Build {SECRET}; run the tests to verify it."),
            task("qa", agent="qa", depends=["build"], description=f"Test {SECRET} with pytest."),
        ],
    )
    document.update(overrides)
    return document


def validate_arguments(spec: SpecFile | Path | str, sha256: str, *extra: str) -> list[str]:
    path = spec.path if isinstance(spec, SpecFile) else spec
    return ["validate", "--spec-file", str(path), "--spec-sha256", sha256, *extra]


def symlink_or_skip(target: Path, link: Path) -> Path:
    try:
        link.symlink_to(target, target_is_directory=target.is_dir())
    except OSError as exc:  # unprivileged Windows
        pytest.skip(f"cannot create a symlink here: {exc}")
    return link


# ---- the refusal cases ------------------------------------------------------------------------


@attrs.frozen
class Refusal:
    """How to provoke one code: ``arrange`` builds files and returns the arguments
    (without ``--json``) and, optionally, a fault point and squad-root override."""

    code: ErrorCode
    arrange: Callable[[Sandbox], list[str]]
    fault: str | None = None
    root: Callable[[Sandbox], str] | None = None


def _malformed_duplicate_key(sandbox: Sandbox) -> list[str]:
    data = encode(secret_spec()).replace(
        b'"schemaVersion": 1,', b'"schemaVersion": 1, "goal": "x",'
    )
    spec = sandbox.write_spec_bytes(data)
    return validate_arguments(spec, spec.sha256)


def _malformed_unknown_property(sandbox: Sandbox) -> list[str]:
    spec = sandbox.write_spec(secret_spec(extra=SECRET))
    return validate_arguments(spec, spec.sha256)


def _hash_wrong(sandbox: Sandbox) -> list[str]:
    spec = sandbox.write_spec(secret_spec())
    return validate_arguments(spec, sha(b"other bytes"))


def _hash_uppercase(sandbox: Sandbox) -> list[str]:
    spec = sandbox.write_spec(secret_spec())
    return validate_arguments(spec, spec.sha256.upper())


def _spec_missing(sandbox: Sandbox) -> list[str]:
    return validate_arguments(sandbox.cwd / "absent.json", "0" * 64)


def _spec_symlink(sandbox: Sandbox) -> list[str]:
    spec = sandbox.write_spec(secret_spec(), name="real.json")
    link = symlink_or_skip(spec.path, sandbox.cwd / "link.json")
    return validate_arguments(link, spec.sha256)


def _spec_directory(sandbox: Sandbox) -> list[str]:
    directory = sandbox.cwd / "a-directory.json"
    directory.mkdir()
    return validate_arguments(directory, "0" * 64)


def _spec_fifo(sandbox: Sandbox) -> list[str]:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    fifo = sandbox.cwd / "fifo.json"
    os.mkfifo(fifo)  # nobody ever opens the writing end: a blocking open would hang
    return validate_arguments(fifo, "0" * 64)


def _spec_file_too_large(sandbox: Sandbox) -> list[str]:
    data = encode(secret_spec())
    data += b" " * (MAX_SPEC_BYTES + 1 - len(data))
    spec = sandbox.write_spec_bytes(data)
    return validate_arguments(spec, spec.sha256)


def _goal_too_large(sandbox: Sandbox) -> list[str]:
    spec = sandbox.write_spec(secret_spec(goal=f"{SECRET} " * 4000))
    return validate_arguments(spec, spec.sha256)


def _plan_unknown_dependency(sandbox: Sandbox) -> list[str]:
    document = secret_spec()
    document["tasks"][1]["depends"] = [SECRET]
    spec = sandbox.write_spec(document)
    return validate_arguments(spec, spec.sha256)


def _plan_cycle(sandbox: Sandbox) -> list[str]:
    document = secret_spec()
    document["tasks"][0]["depends"] = ["qa"]
    spec = sandbox.write_spec(document)
    return validate_arguments(spec, spec.sha256)


def _with_artifact(sandbox: Sandbox, **fields: Any) -> list[str]:
    data = f"artifact for {SECRET}\n".encode()
    real = sandbox.cwd / "artifact.txt"
    real.write_bytes(data)
    entry = {**artifact("log", str(real), data), **fields}
    spec = sandbox.write_spec(secret_spec(artifacts=[entry]))
    return validate_arguments(spec, spec.sha256)


def _artifact_relative(sandbox: Sandbox) -> list[str]:
    return _with_artifact(sandbox, path="artifact.txt")


def _artifact_missing(sandbox: Sandbox) -> list[str]:
    return _with_artifact(sandbox, path=str(sandbox.cwd / "gone.txt"))


def _artifact_symlink(sandbox: Sandbox) -> list[str]:
    link = sandbox.cwd / "artifact-link.txt"
    arguments = _with_artifact(sandbox, path=str(link))
    symlink_or_skip(sandbox.cwd / "artifact.txt", link)
    return arguments


def _artifact_size(sandbox: Sandbox) -> list[str]:
    return _with_artifact(sandbox, bytes=1)


def _artifact_hash(sandbox: Sandbox) -> list[str]:
    return _with_artifact(sandbox, sha256=sha(b"something else"))


def _create(sandbox: Sandbox) -> list[str]:
    spec = sandbox.write_spec(secret_spec())
    return create_arguments(spec)[:-1]  # without --json: the test adds it or not


def _root_under_a_file(sandbox: Sandbox) -> str:
    blocker = sandbox.base / "a-file"
    blocker.write_bytes(b"not a directory")
    return str(blocker / "squads")


REFUSALS: dict[str, Refusal] = {
    "duplicate-key": Refusal(ErrorCode.SPEC_MALFORMED, _malformed_duplicate_key),
    "unknown-property": Refusal(ErrorCode.SPEC_MALFORMED, _malformed_unknown_property),
    "wrong-hash": Refusal(ErrorCode.SPEC_HASH_MISMATCH, _hash_wrong),
    "uppercase-hash": Refusal(ErrorCode.SPEC_HASH_MISMATCH, _hash_uppercase),
    "spec-missing": Refusal(ErrorCode.SPEC_UNSTABLE, _spec_missing),
    "spec-symlink": Refusal(ErrorCode.SPEC_UNSTABLE, _spec_symlink),
    "spec-directory": Refusal(ErrorCode.SPEC_UNSTABLE, _spec_directory),
    "spec-fifo": Refusal(ErrorCode.SPEC_UNSTABLE, _spec_fifo),
    "file-too-large": Refusal(ErrorCode.SPEC_TOO_LARGE, _spec_file_too_large),
    "goal-too-large": Refusal(ErrorCode.SPEC_TOO_LARGE, _goal_too_large),
    "unknown-dependency": Refusal(ErrorCode.PLAN_INVALID, _plan_unknown_dependency),
    "dependency-cycle": Refusal(ErrorCode.PLAN_INVALID, _plan_cycle),
    "artifact-relative": Refusal(ErrorCode.ARTIFACT_PATH_INVALID, _artifact_relative),
    "artifact-missing": Refusal(ErrorCode.ARTIFACT_MISSING, _artifact_missing),
    "artifact-symlink": Refusal(ErrorCode.ARTIFACT_UNSTABLE, _artifact_symlink),
    "artifact-size": Refusal(ErrorCode.ARTIFACT_SIZE_MISMATCH, _artifact_size),
    "artifact-hash": Refusal(ErrorCode.ARTIFACT_HASH_MISMATCH, _artifact_hash),
    "root-under-a-file": Refusal(ErrorCode.PUBLISH_FAILED, _create, root=_root_under_a_file),
    "injected-io-error": Refusal(
        ErrorCode.PUBLISH_FAILED, _create, fault="create_file_exclusive:1:oserror"
    ),
}


def run_both_ways(
    sandbox: Sandbox, arguments: list[str], *, fault: str | None = None, root: str | None = None
) -> tuple[CliRun, CliRun]:
    """The same command with and without ``--json``, in two concurrent processes."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        as_json, as_text = (
            pool.submit(run_cli, sandbox, [*arguments, *flags], fault=fault, root=root)
            for flags in (["--json"], [])
        )
        return as_json.result(), as_text.result()


def test_every_refusal_code_of_the_foundation_issue_has_a_case() -> None:
    refused = {refusal.code for refusal in REFUSALS.values()}
    assert refused == FOUNDATION_CODES
    # all but PUBLISH_FAILED through validate, which writes nothing
    for name, refusal in REFUSALS.items():
        if refusal.code is not ErrorCode.PUBLISH_FAILED:
            assert refusal.arrange is not _create, name


@pytest.mark.parametrize("name", REFUSALS)
def test_a_refusal_exits_1_with_exactly_one_json_error_object_and_a_clean_stderr(
    tmp_path: Path, name: str
) -> None:
    refusal = REFUSALS[name]
    sandbox = Sandbox.create(tmp_path)
    as_json, as_text = run_both_ways(
        sandbox,
        refusal.arrange(sandbox),
        fault=refusal.fault,
        root=refusal.root(sandbox) if refusal.root is not None else None,
    )

    assert as_json.returncode == CLI_REFUSAL, as_json
    assert as_json.error_code() == refusal.code
    assert as_json.json()["error"]["message"]
    assert as_json.stderr == ""

    assert as_text.returncode == CLI_REFUSAL, as_text
    assert as_text.stdout == ""
    lines = as_text.stderr.splitlines()
    assert len(lines) == 1, as_text.stderr
    assert lines[0] == f"pi-squad: {refusal.code}: {as_json.json()['error']['message']}"

    for output in (as_json.stdout, as_text.stderr):
        assert SECRET.lower() not in output.lower()
        assert "Traceback" not in output
    assert listed_squads(sandbox.root) == []


def test_validate_writes_nothing_whether_it_accepts_or_refuses(tmp_path: Path) -> None:
    sandbox = Sandbox.create(tmp_path)
    agents = sandbox.root / "agents"
    agents.mkdir(parents=True)
    (agents / "qa.json").write_text(
        '{"name": "qa", "role": "r", "description": "d", "prompt": "p"}'
    )
    good = sandbox.write_spec(secret_spec(), name="good.json")
    bad = sandbox.write_spec(secret_spec(extra=1), name="bad.json")
    before = tree_snapshot(sandbox.base)

    accepted = run_cli(sandbox, [*validate_arguments(good, good.sha256), "--json"])
    refused = run_cli(sandbox, [*validate_arguments(bad, bad.sha256), "--json"])

    assert (accepted.returncode, refused.returncode) == (0, CLI_REFUSAL)
    assert tree_snapshot(sandbox.base) == before


def test_validate_does_not_create_a_missing_squad_root(tmp_path: Path) -> None:
    sandbox = Sandbox.create(tmp_path)
    spec = sandbox.write_spec(secret_spec())
    assert run_cli(sandbox, [*validate_arguments(spec, spec.sha256), "--json"]).returncode == 0
    assert not sandbox.root.exists()


# ---- success shapes ---------------------------------------------------------------------------


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


# ---- paths and usage --------------------------------------------------------------------------


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
