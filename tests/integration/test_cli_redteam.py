"""Red-team regressions (issue 11) seen through the real command line.

Each test drives ``pi-squad`` in a subprocess (``tests/integration/cli_support.py``): a refusal
is exit 1 and exactly one ``{"error": {"code", "message"}}`` object on stdout under ``--json``,
one ``pi-squad: CODE: ...`` line on stderr otherwise, and never a traceback.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.builders import artifact, encode, spec_document
from tests.integration.cli_support import CliRun, Sandbox, SpecFile, run_cli

REFUSED = 1


def assert_one_json_error(run: CliRun, code: str) -> str:
    assert run.returncode == REFUSED, run
    assert run.stderr == "", run.stderr
    assert "Traceback" not in run.stdout
    assert run.error_code() == code, run.stdout
    message: str = run.json()["error"]["message"]
    return message


def assert_one_error_line(run: CliRun, code: str) -> str:
    assert run.returncode == REFUSED, run
    assert run.stdout == "", run.stdout
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith(f"pi-squad: {code}: "), run.stderr
    return lines[0]


# -- finding 1: nesting depth ------------------------------------------------------------------


def deep_spec(sandbox: Sandbox, depth: int) -> SpecFile:
    document = spec_document()
    document["tasks"][0]["depends"] = ["@NESTED@", "@NESTED@"]
    text = encode(document).decode().replace('"@NESTED@"', "[" * depth + "]" * depth)
    return sandbox.write_spec_bytes(text.encode())


@pytest.mark.parametrize("command", ["validate", "create"])
@pytest.mark.parametrize("depth", [250, 100_000])
def test_a_spec_nested_deep_is_one_spec_malformed_error(
    tmp_path: Path, command: str, depth: int
) -> None:
    sandbox = Sandbox.create(tmp_path)
    spec = deep_spec(sandbox, depth)
    arguments = [command, "--spec-file", str(spec.path), "--spec-sha256", spec.sha256]

    message = assert_one_json_error(run_cli(sandbox, [*arguments, "--json"]), "SPEC_MALFORMED")

    assert message == (
        f"{spec.path}: spec file nests arrays and objects {depth + 4} levels deep; allowed 32 "
        "levels (a valid spec needs 4, at $.tasks[i].depends): remove the extra nesting"
    )
    assert_one_error_line(run_cli(sandbox, arguments), "SPEC_MALFORMED")
    assert not sandbox.root.exists() or not any(sandbox.root.iterdir())


# -- finding 2: an artifact's declared size is checked before it is hashed ----------------------


@pytest.mark.parametrize("command", ["validate", "create"])
def test_a_20_gib_sparse_artifact_declared_small_is_a_size_mismatch(
    tmp_path: Path, command: str
) -> None:
    sandbox = Sandbox.create(tmp_path)
    huge = sandbox.cwd / "huge.bin"
    huge.write_bytes(b"")
    os.truncate(huge, 20 * (1 << 30))  # sparse: hashing it would take minutes
    entry = artifact("huge", str(huge), b"twelve bytes")
    spec = sandbox.write_spec(spec_document(artifacts=[entry]))
    arguments = [command, "--spec-file", str(spec.path), "--spec-sha256", spec.sha256, "--json"]

    message = assert_one_json_error(run_cli(sandbox, arguments), "ARTIFACT_SIZE_MISMATCH")

    assert message == (
        f"{spec.path}: $.artifacts[0] ('huge'): file is {20 * (1 << 30)} bytes; the spec "
        "declares 12: restore the file, or if it is the right one set $.artifacts[0].bytes and "
        ".sha256 to its length and sha256sum"
    )
