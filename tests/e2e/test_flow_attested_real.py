"""Attested flows over real Pi 0.80.10 children and the scripted model (issue 15 item 6): a
child that tries ``bash`` before reading the brief is blocked by its own Pi's guard, reads
every chunk, and only then works; a child that answers without reading fails its run."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from adapters.isolation.landlock import select_isolation
from adapters.pi_runtime import PiRuntime
from adapters.scripted_model.policies import IMPATIENT_AFTER_MARKER, IMPATIENT_BASH_MARKER
from entrypoints.cli import main
from entrypoints.concerns.settings import Settings
from tests.e2e.flow_runs import WHY, run_flow

pytestmark = pytest.mark.realpi
# Three chunks: the child must ask for each.
BRIEF = ("# House rules\n" + "Every change is reviewed before it lands.\n" * 2000).encode()


def brief(tmp_path: Path) -> dict[str, str]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    (project / "brief.md").write_bytes(BRIEF)
    return {"specFile": "brief.md", "specSha256": hashlib.sha256(BRIEF).hexdigest()}


def attested_run(
    tmp_path: Path, policy: str, *, status: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A flow of one researcher that must read the brief first, its child on ``policy``, which
    exits ``status``; its one result, and the whole document."""
    call = {"agent": "researcher", "task": "apply the rules", "why": WHY, "spec": brief(tmp_path)}
    code, document = run_flow(tmp_path, call, policy=policy)
    assert code == status, document
    (result,) = document["results"]
    return result, document


def test_a_child_that_tries_bash_before_reading_is_blocked_then_reads_and_works(
    tmp_path: Path,
    runtime: PiRuntime,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    result, document = attested_run(tmp_path, "impatient", status=0)
    assert result["status"] == "completed"
    assert result["attestation"] == {"status": "valid", "reason": None}
    project = tmp_path / "project"
    assert not (project / IMPATIENT_BASH_MARKER).exists(), "bash before reading was blocked"
    assert (project / IMPATIENT_AFTER_MARKER).exists(), "bash after reading ran"
    squad_id = document["spec"]["squadId"]
    assert document["spec"]["chunks"] == 3
    # Confined as a squad child wherever the kernel can: its proof is then unwritable by it.
    chosen = select_isolation(Settings().isolation(), os.environ)
    assert document["spec"]["isolation"] == chosen.support().mode
    # The proof is the squads' own: ``pi-squad verify`` re-checks it from the records.
    capsys.readouterr()
    monkeypatch.setenv("PI_SQUAD_ROOT", str(tmp_path / "root"))
    assert main(["verify", squad_id]) == 0
    assert "attestation valid" in capsys.readouterr().out


def test_a_child_that_answers_without_reading_fails_its_run(
    tmp_path: Path, runtime: PiRuntime
) -> None:
    result, _ = attested_run(tmp_path, "lazy", status=1)
    assert result["status"] == "failed"
    assert result["error"]["code"] == "ATTESTATION_INVALID"
    assert result["attestation"]["status"] == "missing"
