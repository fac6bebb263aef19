"""The refusals of the real ``pi-squad`` command line, in a subprocess with its own home, root
and cwd.

Every error code of the foundation issue is reached through ``pi-squad validate --json`` (and
``PUBLISH_FAILED`` through ``create``): exit status 1, stdout exactly one JSON object
``{"error": {"code", "message"}}``, nothing on stderr, and no message quoting spec content.
Without ``--json`` the same refusal is one ``pi-squad: CODE: message`` line on stderr.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest

from domain.errors import ErrorCode
from domain.spec.limits import MAX_SPEC_BYTES
from tests.builders import artifact, encode, sha
from tests.integration.cli_spec_support import (
    CLI_REFUSAL,
    SECRET,
    run_both_ways,
    secret_spec,
    symlink_or_skip,
    validate_arguments,
)
from tests.integration.cli_support import (
    Sandbox,
    create_arguments,
    listed_squads,
    run_cli,
    tree_snapshot,
)

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
