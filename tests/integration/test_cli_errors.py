"""The exact wording of the common refusals: one line a person can act on.

Each says what was wrong, where (the file, then the JSON path), the measured and the allowed
values, and what to do. The real command line runs in a subprocess twice: without ``--json``
the refusal is one ``pi-squad: CODE: message`` line on stderr and nothing on stdout; with
``--json`` it is the stable ``{"error": {"code", "message"}}`` object with the same message.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

from domain.spec.limits import MAX_SPEC_BYTES
from tests.builders import artifact, encode, sha, spec_document
from tests.integration.cli_support import Sandbox, run_cli

REFUSED = 1


@attrs.frozen
class Case:
    """``arrange`` writes files and returns the arguments (without ``--json``) and the exact
    message expected."""

    code: str
    arrange: Callable[[Sandbox], tuple[list[str], str]]


def _validate(spec: Path, digest: str) -> list[str]:
    return ["validate", "--spec-file", str(spec), "--spec-sha256", digest]


def _hash_mismatch(sandbox: Sandbox) -> tuple[list[str], str]:
    spec = sandbox.write_spec(spec_document())
    claimed = sha(b"other bytes")
    return _validate(spec.path, claimed), (
        f"{spec.path}: SHA-256 of the spec file's {len(spec.data)} bytes does not match "
        f"specSha256 {claimed}: hash the exact file you mean (e.g. sha256sum) and pass that digest"
    )


def _uppercase_hash(sandbox: Sandbox) -> tuple[list[str], str]:
    spec = sandbox.write_spec(spec_document())
    return _validate(spec.path, spec.sha256.upper()), (
        "specSha256 contains uppercase hex digits; use lowercase (hashes are never normalised)"
    )


def _missing_file(sandbox: Sandbox) -> tuple[list[str], str]:
    path = sandbox.cwd / "absent.json"
    return _validate(path, "0" * 64), (
        f"spec file {path}: missing: no such file: check the path (a relative path resolves "
        "against --cwd, by default the current directory)"
    )


def _too_large(sandbox: Sandbox) -> tuple[list[str], str]:
    data = encode(spec_document())
    data += b" " * (MAX_SPEC_BYTES + 7 - len(data))
    spec = sandbox.write_spec_bytes(data)
    return _validate(spec.path, spec.sha256), (
        f"{spec.path}: spec file is {MAX_SPEC_BYTES + 7} bytes; allowed {MAX_SPEC_BYTES} bytes: "
        "move large content into artifacts (absolute path, bytes, sha256)"
    )


def _malformed_json(sandbox: Sandbox) -> tuple[list[str], str]:
    spec = sandbox.write_spec_bytes(b'{\n  "schemaVersion": 1,\n  "goal": "x",,\n}\n')
    return _validate(spec.path, spec.sha256), (
        f"{spec.path}: spec file is not strict JSON: Expecting property name enclosed in double "
        "quotes (line 3, column 15): fix it there (strict JSON: UTF-8 without a byte-order mark, "
        "no comments, no trailing commas, no duplicate keys)"
    )


def _unknown_property(sandbox: Sandbox) -> tuple[list[str], str]:
    document = spec_document()
    document["tasks"][1]["owner"] = "someone"
    spec = sandbox.write_spec(document)
    return _validate(spec.path, spec.sha256), (
        f"{spec.path}: $.tasks[1]: 1 unknown property (allowed: agent, artifactRefs, depends, "
        "description, id, inheritContext, title): remove it or correct its name"
    )


def _plan_cycle(sandbox: Sandbox) -> tuple[list[str], str]:
    document = spec_document()
    document["tasks"][0]["depends"] = ["qa"]
    spec = sandbox.write_spec(document)
    return _validate(spec.path, spec.sha256), (
        f"{spec.path}: $.tasks: dependency cycle 'build' -> 'qa' -> 'build': remove one of these "
        "dependencies so that some task can start first"
    )


def _artifact_hash_mismatch(sandbox: Sandbox) -> tuple[list[str], str]:
    data = b"interface definitions\n"
    real = sandbox.cwd / "api.txt"
    real.write_bytes(data)
    declared = sha(b"an older version")
    entry = artifact("api-notes", str(real), data, sha256=declared)
    spec = sandbox.write_spec(spec_document(artifacts=[entry]))
    return _validate(spec.path, spec.sha256), (
        f"{spec.path}: $.artifacts[0] ('api-notes'): SHA-256 of the file does not match the "
        f"declared {declared}: restore the file, or if it is the right one set "
        "$.artifacts[0].sha256 to its sha256sum (never to a digest copied from an error message)"
    )


def _squad_not_found(command: str) -> Callable[[Sandbox], tuple[list[str], str]]:
    def arrange(sandbox: Sandbox) -> tuple[list[str], str]:
        return [command, "no-such-squad"], (
            f"squad 'no-such-squad' not found under {sandbox.root}: check the id (each squad is "
            "a directory there; `pi-squad status` shows the newest) or set PI_SQUAD_ROOT to the "
            "root it was created in"
        )

    return arrange


def _not_a_squad_id(sandbox: Sandbox) -> tuple[list[str], str]:
    return ["report", "Not_An_Id"], (
        "not a squad id: a squad id is 1-128 lowercase letters, digits and inner hyphens; check "
        f"the id (each squad is a directory under {sandbox.root})"
    )


def _no_squads(sandbox: Sandbox) -> tuple[list[str], str]:
    return ["watch"], f"no squads under {sandbox.root}; create one with `pi-squad create`"


CASES = {
    "hash-mismatch": Case("SPEC_HASH_MISMATCH", _hash_mismatch),
    "uppercase-hash": Case("SPEC_HASH_MISMATCH", _uppercase_hash),
    "missing-file": Case("SPEC_UNSTABLE", _missing_file),
    "too-large": Case("SPEC_TOO_LARGE", _too_large),
    "malformed-json": Case("SPEC_MALFORMED", _malformed_json),
    "unknown-property": Case("SPEC_MALFORMED", _unknown_property),
    "plan-cycle": Case("PLAN_INVALID", _plan_cycle),
    "artifact-hash-mismatch": Case("ARTIFACT_HASH_MISMATCH", _artifact_hash_mismatch),
    "squad-not-found-verify": Case("SQUAD_NOT_FOUND", _squad_not_found("verify")),
    "squad-not-found-status": Case("SQUAD_NOT_FOUND", _squad_not_found("status")),
    "squad-not-found-watch": Case("SQUAD_NOT_FOUND", _squad_not_found("watch")),
    "squad-not-found-report": Case("SQUAD_NOT_FOUND", _squad_not_found("report")),
    "not-a-squad-id": Case("SQUAD_NOT_FOUND", _not_a_squad_id),
    "no-squads": Case("SQUAD_NOT_FOUND", _no_squads),
}


@pytest.mark.parametrize("name", CASES)
def test_the_refusal_is_one_actionable_line(tmp_path: Path, name: str) -> None:
    case = CASES[name]
    sandbox = Sandbox.create(tmp_path)
    arguments, message = case.arrange(sandbox)

    as_text = run_cli(sandbox, arguments)
    as_json = run_cli(sandbox, [*arguments, "--json"])

    assert as_text.returncode == REFUSED, as_text
    assert as_text.stdout == ""
    assert as_text.stderr == f"pi-squad: {case.code}: {message}\n"
    assert as_json.returncode == REFUSED, as_json
    assert as_json.stderr == ""
    assert as_json.json() == {"error": {"code": case.code, "message": message}}
