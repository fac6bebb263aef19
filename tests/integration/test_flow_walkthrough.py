"""docs/flows.md's offline walkthrough, run exactly as written: every command of its console
blocks in one shell started in the checkout, in a temporary directory, on real Pi and the
scripted model; each printed output must be what the document shows (``…`` aside). Skipped
without the project runtime (``make runtime``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.pi_runtime_support import installed_pi_runtime
from tests.support.transcript import run, section, step_mismatch, steps

pytestmark = pytest.mark.realpi

REPO = Path(__file__).resolve().parents[2]
HEADING = "## An offline walkthrough"
# The scripted model runs in the background: whatever happens, it is stopped with the shell.
STOP_THE_MODEL = "trap 'if [ -n \"${MODEL:-}\" ]; then kill $MODEL 2>/dev/null || true; fi' EXIT"
# Six children, each a Pi start and one model turn, and three CLI calls.
WALKTHROUGH_TIMEOUT_SECONDS = 300.0


def test_the_walkthrough_runs_as_written(tmp_path: Path) -> None:
    installed_pi_runtime()
    if not (REPO / ".runtime" / "env.sh").is_file():
        pytest.skip("no .runtime/env.sh (run `make runtime`)")
    walkthrough = steps(section((REPO / "docs" / "flows.md").read_text(encoding="utf-8"), HEADING))
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"PI_SQUAD_ROOT", "PI_CODING_AGENT_DIR", "PI_SQUAD_CHILD", "VIRTUAL_ENV"}
    }
    env.update(TMPDIR=str(tmp_path), HOME=str(tmp_path / "home"))
    printed = run(walkthrough, REPO, env, STOP_THE_MODEL, WALKTHROUGH_TIMEOUT_SECONDS)
    assert len(printed) == len(walkthrough) >= 12
    for step, output in zip(walkthrough, printed, strict=True):
        drift = step_mismatch(step, output)
        assert drift is None, f"$ {step.command}\n{drift}"
