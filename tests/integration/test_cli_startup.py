"""What ``pi-squad`` loads before it answers: ``--version`` and the commands that only read a
squad (``status``, ``verify``) import only what they use (issue 34). These are import-set
checks, not timings (``bench.cli_start`` times the same commands): they fail when a heavy
module comes back onto a command's path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.squads import multi_chunk_spec, publish_on_disk

# Not needed to print a version: the wiring, the schemas, every adapter and use case, and the
# installed distribution's metadata (the version is a constant, ``entrypoints/version.py``).
VERSION_FORBIDDEN = (
    "dependency_injector",
    "jsonschema",
    "adapters",
    "application",
    "importlib.metadata",
    "attrs",
)
# Not needed to read a squad: the full container and what only it wires (the isolation
# adapters and Landlock, the Pi runtime and its doctor, the flow runner, the driver), the
# report and watch faces, spec validation.
READING_FORBIDDEN = (
    "entrypoints.container",
    "entrypoints.concerns.driver",
    "entrypoints.concerns.settings",
    "entrypoints.report",
    "entrypoints.watch",
    "entrypoints.run",
    "entrypoints.flow",
    "adapters.isolation",
    "adapters.isolation.landlock",
    "landlockpy",
    "adapters.pi_runtime",
    "adapters.pi_rpc",
    "application.flows",
    "application.squads.scheduler",
    "jsonschema",
    "rich",
    "importlib.metadata",
    # Nor the ports and models of a child: ``application.ports`` finds the reading ports first.
    "application.ports.children",
    "application.ports.pi_events",
    "application.ports.tracing",
    "domain.child_environment",
)
# Prints the modules loaded when the process ends, whichever way it ends.
_REPORTING_MAIN = (
    "import atexit, json, sys; atexit.register(lambda: sys.stderr.write("
    "'\\nMODULES ' + json.dumps(sorted(sys.modules)) + '\\n')); sys.argv[0] = 'pi-squad'; "
    "from {module} import main; raise SystemExit(main())"
)


def run_reporting_modules(
    module: str, arguments: Sequence[str], env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """``module``'s ``main`` as the console script runs it, with ``arguments``; what it printed
    and the modules it had loaded."""
    completed = subprocess.run(
        [sys.executable, "-c", _REPORTING_MAIN.format(module=module), *arguments],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    marker = completed.stderr.rsplit("\nMODULES ", 1)[1]
    return completed, set(json.loads(marker))


def loaded_of(modules: set[str], forbidden: Sequence[str]) -> list[str]:
    """The ``forbidden`` packages (or any module under them) among ``modules``."""
    return sorted(
        name for name in forbidden if any(m == name or m.startswith(name + ".") for m in modules)
    )


@pytest.mark.parametrize("module", ["entrypoints.launcher", "entrypoints.cli"])
def test_version_imports_no_wiring_schema_or_adapter(module: str) -> None:
    completed, modules = run_reporting_modules(module, ["--version"])
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "pi-squad 0.1.0 (Pi 0.80.10)\n"
    assert loaded_of(modules, VERSION_FORBIDDEN) == []


@pytest.mark.parametrize("command", ["status", "verify"])
def test_a_command_that_reads_a_squad_imports_no_face_runner_or_isolation(
    command: str, tmp_path: Path
) -> None:
    published = publish_on_disk(tmp_path, multi_chunk_spec(2))
    env = {**os.environ, "PI_SQUAD_ROOT": str(tmp_path / "root")}
    completed, modules = run_reporting_modules("entrypoints.launcher", [command, "--json"], env)
    assert json.loads(completed.stdout)["squadId"] == published.squad.id, completed.stderr
    assert loaded_of(modules, READING_FORBIDDEN) == []
    # What it does import: the small container's wiring, over the real store.
    assert {"entrypoints.reading_container", "adapters.store.files"} <= modules


# Not needed to show the recorded flow runs: the runner, the modes, the full container and
# what only it wires, the faces.
FLOW_READING_FORBIDDEN = (
    "entrypoints.container",
    "entrypoints.concerns.driver",
    "entrypoints.flow",
    "application.flows.run_flow",
    "domain.flows.strategies",
    "adapters.isolation",
    "landlockpy",
    "adapters.pi_runtime",
    "adapters.pi_rpc",
    "entrypoints.report",
    "entrypoints.watch",
    "jsonschema",
    "rich",
)


@pytest.mark.parametrize("arguments", [["flow", "list", "--json"], ["flow", "status", "--json"]])
def test_showing_the_recorded_flow_runs_imports_no_runner_or_full_container(
    arguments: list[str], tmp_path: Path
) -> None:
    env = {**os.environ, "PI_SQUAD_ROOT": str(tmp_path / "root")}
    completed, modules = run_reporting_modules("entrypoints.launcher", arguments, env)
    document = json.loads(completed.stdout)
    # Nothing recorded: the list is empty, and status names the command that lists them.
    assert document == {"runs": [], "unreadable": []} or (
        document["error"]["code"] == "FLOW_RUN_NOT_FOUND"
    ), completed.stderr
    assert loaded_of(modules, FLOW_READING_FORBIDDEN) == []
    assert {"entrypoints.reading_container", "application.flows.flow_journal"} <= modules
