"""Red-team regressions (issue 11) seen through the real command line.

Each test drives ``pi-squad`` in a subprocess (``tests/integration/cli_support.py``): a refusal
is exit 1 and exactly one ``{"error": {"code", "message"}}`` object on stdout under ``--json``,
one ``pi-squad: CODE: ...`` line on stderr otherwise, and never a traceback.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.builders import artifact, encode, spec_document
from tests.integration.cli_support import (
    CliRun,
    Sandbox,
    SpecFile,
    create_arguments,
    create_in_process,
    run_cli,
)

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


# -- finding 3: a corrupt record is RECORD_CORRUPT naming the file, never a traceback ----------


def _truncated(original: bytes) -> bytes:
    return original[: len(original) // 2]


def _wrong_type(original: bytes) -> bytes:
    document = json.loads(original) if original.strip() else {}
    document["status"] = 42  # a number where the record holds a status name
    return json.dumps(document).encode()


CORRUPTIONS: dict[str, Callable[[bytes], bytes]] = {
    "truncated": _truncated,
    "wrong-type": _wrong_type,
    "empty": lambda _original: b"",
}
RECORDS = {"squad.json": "squad.json", "task.json": ".records/build/task.json"}
COMMANDS: dict[str, Callable[[str], list[str]]] = {
    "status": lambda squad: ["status", squad],
    "verify": lambda squad: ["verify", squad],
    "modify": lambda squad: ["modify", squad, "pause_task", "--task-id", "build"],
    "review": lambda squad: ["review", squad, "--verdict", "pass"],
    "report": lambda squad: ["report", squad],
    "watch": lambda squad: ["watch", squad, "--interval", "0.05"],
    "run": lambda squad: ["run", "--squad", squad],
}


def corrupt_squad(tmp_path: Path, record: str, corruption: str) -> tuple[Sandbox, str, Path]:
    """A published squad (created in-process) with one record corrupted: (sandbox, id, file)."""
    sandbox = Sandbox.create(tmp_path)
    squad_id = create_in_process(sandbox, sandbox.write_spec(spec_document()))
    path = sandbox.root / squad_id / record
    original = path.read_bytes() if path.exists() else b""
    path.write_bytes(CORRUPTIONS[corruption](original))
    return sandbox, squad_id, path


@pytest.mark.parametrize("corruption", CORRUPTIONS)
@pytest.mark.parametrize("record", RECORDS)
@pytest.mark.parametrize("command", COMMANDS)
def test_a_corrupt_record_is_one_record_corrupt_error(
    tmp_path: Path, command: str, record: str, corruption: str
) -> None:
    sandbox, squad_id, path = corrupt_squad(tmp_path, RECORDS[record], corruption)

    run = run_cli(sandbox, [*COMMANDS[command](squad_id), "--json"])

    if record == "squad.json":
        message = assert_one_json_error(run, "RECORD_CORRUPT")
        assert message.startswith(f"{path}: not a valid squad record: ")
        assert message.endswith(
            "pi-squad writes its records whole (atomically), so something else truncated or "
            "changed this file: restore it from a backup, or remove the squad's directory and "
            "create the squad again"
        )
    else:  # a pinned task whose record does not decode is an integrity failure
        message = assert_one_json_error(run, "SQUAD_INTEGRITY")
        assert f"task 'build': {path}: not a valid task record: " in message
        assert "restored from a backup" in message


@pytest.mark.parametrize("command", COMMANDS)
def test_a_corrupt_record_without_json_is_one_stderr_line(tmp_path: Path, command: str) -> None:
    sandbox, squad_id, path = corrupt_squad(tmp_path, "squad.json", "truncated")

    line = assert_one_error_line(run_cli(sandbox, COMMANDS[command](squad_id)), "RECORD_CORRUPT")

    assert line.startswith(f"pi-squad: RECORD_CORRUPT: {path}: not a valid squad record: ")


@pytest.mark.parametrize("corruption", CORRUPTIONS)
def test_a_corrupt_mailbox_stops_run_with_record_corrupt(tmp_path: Path, corruption: str) -> None:
    sandbox, squad_id, path = corrupt_squad(tmp_path, ".records/build/mailbox.json", corruption)

    run = run_cli(sandbox, ["run", "--squad", squad_id, "--json"])

    message = assert_one_json_error(run, "RECORD_CORRUPT")
    assert message.startswith(f"{path}: not a ")


@pytest.mark.parametrize("corruption", CORRUPTIONS)
@pytest.mark.parametrize("command", [["status"], ["watch", "--interval", "0.05"]])
def test_without_a_squad_id_a_corrupt_only_squad_is_named_not_hidden(
    tmp_path: Path, command: list[str], corruption: str
) -> None:
    """``status``/``watch`` pick the newest squad; when the only one cannot be read, saying
    "no squads" would hide it: the error names the squad, its file and what to type next."""
    sandbox, squad_id, path = corrupt_squad(tmp_path, "squad.json", corruption)

    message = assert_one_json_error(run_cli(sandbox, [*command, "--json"]), "RECORD_CORRUPT")

    assert message.startswith(
        f"no readable squad under {sandbox.root}: squad '{squad_id}' is there but its record "
        f"cannot be read: {path}: not a valid squad record: "
    )
    assert message.endswith(f"; once it is restored, `pi-squad verify {squad_id}` checks the squad")
    line = assert_one_error_line(run_cli(sandbox, command), "RECORD_CORRUPT")
    assert f"squad '{squad_id}' is there" in line


def test_without_a_squad_id_a_record_naming_another_squad_is_named(tmp_path: Path) -> None:
    sandbox = Sandbox.create(tmp_path)
    squad_id = create_in_process(sandbox, sandbox.write_spec(spec_document()))
    record = sandbox.root / squad_id / "squad.json"
    copy = sandbox.root / "zz-copy" / "squad.json"
    copy.parent.mkdir()
    copy.write_bytes(record.read_bytes())  # a whole record, naming the other squad
    record.write_bytes(_truncated(record.read_bytes()))
    (sandbox.root / "notes").mkdir()  # a directory without squad.json is no squad

    message = assert_one_json_error(run_cli(sandbox, ["status", "--json"]), "RECORD_CORRUPT")

    assert message.startswith(
        f"no readable squad under {sandbox.root}: squad 'zz-copy' is there but its record "
        f"cannot be read (so are '{squad_id}'): {copy}: names another squad than 'zz-copy': "
    )
    assert "notes" not in message


# -- finding 5: the canonical spec must be the squad's own file --------------------------------


@pytest.mark.parametrize("swap", ["path-outside", "spec-dir-symlink"])
def test_verify_fails_when_the_canonical_spec_is_not_the_squads_own(
    tmp_path: Path, swap: str
) -> None:
    sandbox = Sandbox.create(tmp_path)
    squad_id = create_in_process(sandbox, sandbox.write_spec(spec_document()))
    squad_dir = sandbox.root / squad_id
    canonical = squad_dir / "spec" / "spec.v1.json"
    if swap == "path-outside":
        outside = tmp_path / "outside"
        outside.mkdir()
        (outside / "spec.v1.json").write_bytes(canonical.read_bytes())
        record = json.loads((squad_dir / "squad.json").read_bytes())
        record["spec"]["path"] = str(outside / "spec.v1.json")
        (squad_dir / "squad.json").write_text(json.dumps(record, indent=2))
        reason = f"canonical spec path is not {canonical}"
    else:
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (squad_dir / "spec").rename(elsewhere / "spec")
        (squad_dir / "spec").symlink_to(elsewhere / "spec", target_is_directory=True)
        reason = f"canonical spec directory {squad_dir / 'spec'} is not a real directory"

    run = run_cli(sandbox, ["verify", squad_id, "--json"])

    assert run.returncode == REFUSED, run
    verdict = run.json()
    assert verdict["canonical"]["ok"] is False
    assert verdict["canonical"]["reason"].startswith(reason)
    text = run_cli(sandbox, ["verify", squad_id])
    assert text.returncode == REFUSED
    assert "attestation audit: FAIL" in text.stdout


# -- finding 6: Windows device names and case variants of reserved names -----------------------


@pytest.mark.parametrize("task_id", ["con", "nul", "lpt1"])
def test_validate_refuses_a_device_name_as_task_id(tmp_path: Path, task_id: str) -> None:
    sandbox = Sandbox.create(tmp_path)
    document = spec_document()
    document["tasks"][1]["id"] = task_id
    document["tasks"][1]["depends"] = []
    spec = sandbox.write_spec(document)
    arguments = ["validate", "--spec-file", str(spec.path), "--spec-sha256", spec.sha256]

    message = assert_one_json_error(run_cli(sandbox, [*arguments, "--json"]), "PLAN_INVALID")

    assert message.startswith(
        f"{spec.path}: $.tasks[1].id: task id '{task_id}' is reserved: it is a Windows device name"
    )


@pytest.mark.parametrize("task_id", ["con", "Session", "SPEC", "Knowledge", "aux.txt"])
def test_add_task_refuses_a_reserved_task_id(tmp_path: Path, task_id: str) -> None:
    sandbox = Sandbox.create(tmp_path)
    squad_id = create_in_process(sandbox, sandbox.write_spec(spec_document()))
    new_task = json.dumps({"id": task_id, "title": "t", "agent": "backend"})
    arguments = ["modify", squad_id, "add_task", "--task-json", new_task, "--json"]

    message = assert_one_json_error(run_cli(sandbox, arguments), "INVALID_TASK_ID")

    assert message.startswith(f"Invalid file-spec task id '{task_id}'")
    assert not (sandbox.root / squad_id / task_id).exists()


@pytest.mark.parametrize("command", ["status", "verify", "report", "watch"])
@pytest.mark.parametrize("squad_id", ["con", "nul", "knowledge", "agents"])
def test_a_reserved_squad_id_is_not_a_squad_id(tmp_path: Path, command: str, squad_id: str) -> None:
    sandbox = Sandbox.create(tmp_path)
    create_in_process(sandbox, sandbox.write_spec(spec_document()))
    (sandbox.root / "agents").mkdir(exist_ok=True)  # the root's own directory of agent files

    message = assert_one_json_error(
        run_cli(sandbox, [command, squad_id, "--json"]), "SQUAD_NOT_FOUND"
    )

    assert message.startswith(f"not a squad id: '{squad_id}' is reserved: ")
    assert message.endswith(f"check the id (each squad is a directory under {sandbox.root})")


def test_create_with_a_goal_naming_a_device_uses_the_hash_based_id(tmp_path: Path) -> None:
    sandbox = Sandbox.create(tmp_path)
    spec = sandbox.write_spec(spec_document(goal="NUL"))

    run = run_cli(sandbox, create_arguments(spec))

    assert run.returncode == 0, run
    assert run.json()["squadId"] == f"squad-{spec.sha256[:12]}"
