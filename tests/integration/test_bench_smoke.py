"""Every benchmark script runs in ``--quick`` mode and writes a well-formed result.

Timings are never asserted: only that each script ran, exited 0, and wrote a JSON result of
the documented shape (``bench.common.validate_result``) into a temporary directory (the
committed ``bench/results`` are never touched), and that ``bench.report`` renders them. The
scripts that start the real Pi 0.80.10 are skipped when the project runtime is missing.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from bench.common import RESULTS_ENVIRONMENT_VARIABLE, SCRATCH_ENVIRONMENT_VARIABLE, validate_result
from tests.integration.cli_support import CliRun, run_command
from tests.pi_runtime_support import installed_pi_runtime

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = (
    "create_limits",
    "full_read",
    "attestation",
    "scheduler",
    "driver_idle",
    "scaling",
    "profiles",
    "delegation_host",
    "cli_start",
)
# Each real-Pi script and a measure only its real-Pi part writes.
REAL_PI_SCRIPTS = {
    "guard": "pi.turn_with_extension",
    "child_start": "pi.overhead_spec",
    "flow_children": "flow.chain2",
    "flow_waiting": "wait.flow_driver_cpu",
}
TIMEOUT = 120

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        sys.platform != "linux", reason="the benchmarks measure Linux (/proc, directory fsync)"
    ),
]


def run_module(module: str, *arguments: str, env: dict[str, str] | None = None) -> CliRun:
    """``python -m module arguments`` from the repository root, its output captured as text."""
    command = [sys.executable, "-m", module, *arguments]
    return run_command(command, cwd=REPO, env=env, timeout=TIMEOUT)


def render_report(results: Path, output: Path) -> CliRun:
    return run_module("bench.report", "--results-dir", str(results), "--output", str(output))


def run_quick(name: str, results: Path, scratch: Path) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PI_SQUAD_")}
    env[RESULTS_ENVIRONMENT_VARIABLE] = str(results)
    env[SCRATCH_ENVIRONMENT_VARIABLE] = str(scratch)
    completed = run_module(f"bench.{name}", "--quick", env=env)
    assert completed.returncode == 0, completed.stderr[-4000:]
    path = results / f"{name}.json"
    assert path.is_file(), f"{name} wrote no result: {completed.stderr[-2000:]}"
    document: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    assert validate_result(document) == []
    assert document["name"] == name
    assert document["quick"] is True
    assert not list(scratch.iterdir()), "the scratch directory was not cleaned up"
    return document


@pytest.mark.parametrize("name", SCRIPTS)
def test_script_runs_in_quick_mode(name: str, tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    document = run_quick(name, tmp_path / "results", scratch)
    assert document["measures"]


@pytest.mark.realpi
@pytest.mark.parametrize("name", sorted(REAL_PI_SCRIPTS))
def test_real_pi_script_runs_in_quick_mode(name: str, tmp_path: Path) -> None:
    installed_pi_runtime()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    document = run_quick(name, tmp_path / "results", scratch)
    ids = {measure["id"] for measure in document["measures"]}  # type: ignore[attr-defined]
    assert REAL_PI_SCRIPTS[name] in ids


def test_report_renders_results(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    run_quick("attestation", results, scratch)
    output = tmp_path / "benchmarks.md"
    output.write_text("# Benchmarks\n\nCommentary kept.\n", encoding="utf-8")
    completed = render_report(results, output)
    assert completed.returncode == 0, completed.stderr
    text = output.read_text(encoding="utf-8")
    assert text.startswith("# Benchmarks\n\nCommentary kept.\n")
    assert "<!-- bench:begin -->" in text
    assert "<!-- bench:end -->" in text
    assert "validate_task_attestation" in text
    assert "`uv run python -m bench.attestation --quick`" in text
    # Rendering again replaces the generated part instead of appending a second one.
    again = render_report(results, output)
    assert again.returncode == 0, again.stderr
    assert output.read_text(encoding="utf-8").count("<!-- bench:begin -->") == 1
