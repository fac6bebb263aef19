"""docs/flows.md's offline walkthrough, run exactly as written: every command of its console
blocks in one shell started in the checkout, in a temporary directory, on real Pi and the
scripted model; each printed output must be what the document shows (``…`` aside). Skipped
without the project runtime (``make runtime``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.pi_runtime_support import installed_pi_runtime
from tests.support.transcript import document_drifts, section, steps

pytestmark = pytest.mark.realpi

REPO = Path(__file__).resolve().parents[2]
DOCUMENT = REPO / "docs" / "flows.md"
HEADING = "## An offline walkthrough"
# Six children, each a Pi start and one model turn, and three CLI calls.
WALKTHROUGH_TIMEOUT_SECONDS = 300.0


def test_the_walkthrough_runs_as_written(tmp_path: Path) -> None:
    installed_pi_runtime()
    if not (REPO / ".runtime" / "env.sh").is_file():
        pytest.skip("no .runtime/env.sh (run `make runtime`)")
    assert len(steps(section(DOCUMENT.read_text(encoding="utf-8"), HEADING))) >= 12
    assert document_drifts(DOCUMENT, HEADING, REPO, tmp_path, WALKTHROUGH_TIMEOUT_SECONDS) == []
