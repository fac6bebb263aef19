"""``pi-squad run --require-isolation`` and ``PI_SQUAD_REQUIRE_ISOLATION=1`` through the real
command line, where isolation is off (``PI_SQUAD_ISOLATION=none``): the run is refused with
``ISOLATION_UNAVAILABLE`` before anything is published or any child started, and an existing
squad is left exactly as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.isolation.bwrap import probe_bubblewrap
from adapters.isolation.landlock import probe_landlock
from tests.builders import spec_document
from tests.integration.cli_support import (
    CLI,
    CliRun,
    Sandbox,
    create_in_process,
    run_command,
    tree_snapshot,
)

REFUSED = 1
# How each way of asking for isolation is spelled: extra arguments, extra environment.
REQUIREMENTS: dict[str, tuple[list[str], dict[str, str]]] = {
    "flag": (["--require-isolation"], {}),
    "environment": ([], {"PI_SQUAD_REQUIRE_ISOLATION": "1"}),
}


def run_unisolated(sandbox: Sandbox, arguments: list[str], extra_env: dict[str, str]) -> CliRun:
    """``pi-squad arguments`` with isolation switched off, plus ``extra_env``."""
    env = {**sandbox.environment(), "PI_SQUAD_ISOLATION": "none", **extra_env}
    return run_command([*CLI, *arguments], cwd=sandbox.cwd, env=env)


def assert_isolation_refused_json(run: CliRun) -> str:
    assert run.returncode == REFUSED, run
    assert run.stderr == "", run.stderr
    assert run.error_code() == "ISOLATION_UNAVAILABLE", run.stdout
    message: str = run.json()["error"]["message"]
    assert "disabled by PI_SQUAD_ISOLATION=none" in message, "says why there is no isolation"
    assert "unset PI_SQUAD_REQUIRE_ISOLATION" in message, "says how to run without it"
    return message


def published_squads(sandbox: Sandbox) -> list[str]:
    """Squad directories under the squad root (dot-entries are the store's own staging)."""
    if not sandbox.root.exists():
        return []
    return sorted(p.name for p in sandbox.root.iterdir() if not p.name.startswith("."))


@pytest.mark.parametrize("requirement", REQUIREMENTS)
def test_run_of_a_new_spec_requiring_isolation_publishes_nothing(
    tmp_path: Path, requirement: str
) -> None:
    sandbox = Sandbox.create(tmp_path)
    spec = sandbox.write_spec(spec_document())
    extra_args, extra_env = REQUIREMENTS[requirement]
    arguments = ["run", "--spec-file", str(spec.path), "--spec-sha256", spec.sha256, *extra_args]

    assert_isolation_refused_json(run_unisolated(sandbox, [*arguments, "--json"], extra_env))
    text = run_unisolated(sandbox, arguments, extra_env)

    assert text.returncode == REFUSED, text
    assert text.stdout == "", "no 'published squad' line"
    assert text.stderr.startswith("pi-squad: ISOLATION_UNAVAILABLE: "), text.stderr
    assert len(text.stderr.splitlines()) == 1, text.stderr
    assert published_squads(sandbox) == []


@pytest.mark.parametrize("requirement", REQUIREMENTS)
def test_run_of_an_existing_squad_requiring_isolation_changes_nothing(
    tmp_path: Path, requirement: str
) -> None:
    sandbox = Sandbox.create(tmp_path)
    squad_id = create_in_process(sandbox, sandbox.write_spec(spec_document()))
    before = tree_snapshot(sandbox.root)
    extra_args, extra_env = REQUIREMENTS[requirement]

    run = run_unisolated(sandbox, ["run", "--squad", squad_id, *extra_args, "--json"], extra_env)

    assert_isolation_refused_json(run)
    assert tree_snapshot(sandbox.root) == before, "no record written, no child started"


@pytest.mark.parametrize("value", ["", "0", "no"])
def test_other_values_of_the_variable_do_not_require_isolation(tmp_path: Path, value: str) -> None:
    """Only ``1``/``true``/``yes`` require it: a bad spec hash is then the first refusal."""
    sandbox = Sandbox.create(tmp_path)
    spec = sandbox.write_spec(spec_document())
    arguments = ["run", "--spec-file", str(spec.path), "--spec-sha256", "0" * 64, "--json"]

    run = run_unisolated(sandbox, arguments, {"PI_SQUAD_REQUIRE_ISOLATION": value})

    assert run.returncode == REFUSED, run
    assert run.error_code() == "SPEC_HASH_MISMATCH", run.stdout


@pytest.mark.skipif(
    probe_landlock().mode != "landlock", reason="needs Landlock (the ABI is then capped at 5)"
)
@pytest.mark.parametrize("requirement", REQUIREMENTS)
def test_unscoped_landlock_without_namespaces_is_refused_before_anything_is_published(
    tmp_path: Path, requirement: str
) -> None:
    """Landlock ABI 5 (emulated with the tests' knob) cannot scope signals; without bubblewrap's
    PID namespace (``PI_SQUAD_ISOLATION=landlock``) a child could signal a sibling's Node."""
    sandbox = Sandbox.create(tmp_path)
    spec = sandbox.write_spec(spec_document())
    extra_args, extra_env = REQUIREMENTS[requirement]
    arguments = ["run", "--spec-file", str(spec.path), "--spec-sha256", spec.sha256, *extra_args]
    weak = {"PI_SQUAD_ISOLATION": "landlock", "PI_SQUAD_TEST_LANDLOCK_ABI": "5", **extra_env}
    env = {**sandbox.environment(), **weak}

    run = run_command([*CLI, *arguments, "--json"], cwd=sandbox.cwd, env=env)

    assert run.returncode == REFUSED, run
    assert run.error_code() == "ISOLATION_UNAVAILABLE", run.stdout
    message: str = run.json()["error"]["message"]
    assert "landlock(ABI 5, unscoped signals)" in message
    assert "install bubblewrap" in message
    assert "unset PI_SQUAD_REQUIRE_ISOLATION" in message
    assert published_squads(sandbox) == []


@pytest.mark.skipif(
    probe_landlock().mode != "landlock" or probe_bubblewrap({}).sandbox is None,
    reason="needs Landlock and bubblewrap",
)
def test_unscoped_landlock_inside_namespaces_is_accepted(tmp_path: Path) -> None:
    """The same ABI with each child in its own PID namespace: not refused for isolation (a bad
    spec hash is then the first refusal, so no child starts)."""
    sandbox = Sandbox.create(tmp_path)
    spec = sandbox.write_spec(spec_document())
    arguments = ["run", "--spec-file", str(spec.path), "--spec-sha256", "0" * 64, "--json"]
    env = {
        **sandbox.environment(),
        "PI_SQUAD_TEST_LANDLOCK_ABI": "5",
        "PI_SQUAD_REQUIRE_ISOLATION": "1",
    }
    run = run_command([*CLI, *arguments], cwd=sandbox.cwd, env=env)
    assert run.error_code() == "SPEC_HASH_MISMATCH", run.stdout
