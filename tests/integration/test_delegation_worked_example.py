"""docs/delegation.md's worked example, run exactly as written: every command of its console
blocks in one shell started in the checkout, in a temporary directory, on real Pi and the
scripted model; each printed output must be what the document shows (``…`` aside). Skipped
without the project runtime (``make runtime``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.pi_runtime_support import installed_pi_runtime
from tests.support.transcript import document_drifts

pytestmark = pytest.mark.realpi

REPO = Path(__file__).resolve().parents[2]
DOCUMENT = REPO / "docs" / "delegation.md"
HEADING = "## A worked example (offline)"
# Two workers, each a Pi start and a few model turns, and a dozen CLI calls.
EXAMPLE_TIMEOUT_SECONDS = 300.0


def test_the_worked_example_runs_as_written(tmp_path: Path) -> None:
    installed_pi_runtime()
    if not (REPO / ".runtime" / "env.sh").is_file():
        pytest.skip("no .runtime/env.sh (run `make runtime`)")
    assert document_drifts(DOCUMENT, HEADING, REPO, tmp_path, EXAMPLE_TIMEOUT_SECONDS) == []
