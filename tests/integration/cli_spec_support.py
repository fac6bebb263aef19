"""What the ``pi-squad validate`` and ``create`` tests share: a spec that carries a secret no
message may echo, the arguments of a validation, and one command run with and without ``--json``
at once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.builders import spec_document, task
from tests.integration.cli_support import CliRun, Sandbox, SpecFile, run_cli

SECRET = "Zebra-Quartz-7731"  # placed in the goal and every description; must never be echoed
CLI_REFUSAL = 1
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
