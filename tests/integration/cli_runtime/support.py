"""Running ``pi-squad`` in its sandbox over a world's squad root, and reading what it answered."""

from __future__ import annotations

from typing import Any

from tests.integration.cli_support import CliRun, Sandbox, run_cli
from tests.runtime_world import RuntimeWorld

EVIDENCE_ARGS = [
    "--contract-check",
    "every task implemented",
    "--contract-check",
    "no spec field skipped",
    "--diff-review",
    "read the whole diff",
    "--verification",
    "pytest: 12 passed",
    "--integration",
    "ran it end to end",
]


def cli(sandbox: Sandbox, world: RuntimeWorld, *arguments: str) -> CliRun:
    return run_cli(sandbox, list(arguments), root=world.root)


def modify(sandbox: Sandbox, world: RuntimeWorld, *arguments: str) -> CliRun:
    """``pi-squad modify`` of the world's squad, with ``--json``."""
    return cli(sandbox, world, "modify", world.squad_id, *arguments, "--json")


def ok(run: CliRun) -> dict[str, Any]:
    assert run.returncode == 0, (run.stdout, run.stderr)
    return run.json()


def error(run: CliRun, code: str, exit_code: int = 1) -> str:
    assert run.returncode == exit_code, (run.stdout, run.stderr)
    assert run.error_code() == code, run.stdout
    message: str = run.json()["error"]["message"]
    return message


def read_chunks(world: RuntimeWorld, task_id: str, indices: list[int]) -> None:
    world.child_reads(task_id, indices)
