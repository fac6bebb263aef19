"""Attested flows over real Pi 0.80.10 children and the scripted model (issue 15 item 6): a
child that tries ``bash`` before reading the brief is blocked by its own Pi's guard, reads
every chunk, and only then works; a child that answers without reading fails its run."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from adapters.isolation.landlock import select_isolation
from adapters.pi_runtime import PiRuntime
from adapters.scripted_model.policies import IMPATIENT_AFTER_MARKER, IMPATIENT_BASH_MARKER
from entrypoints.cli import main
from tests.e2e.test_flow_real import WHY, run_flow

pytestmark = pytest.mark.realpi
# Three chunks: the child must ask for each.
BRIEF = ("# House rules\n" + "Every change is reviewed before it lands.\n" * 2000).encode()


def brief(tmp_path: Path) -> dict[str, str]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    (project / "brief.md").write_bytes(BRIEF)
    return {"specFile": "brief.md", "specSha256": hashlib.sha256(BRIEF).hexdigest()}


def test_a_child_that_tries_bash_before_reading_is_blocked_then_reads_and_works(
    tmp_path: Path,
    runtime: PiRuntime,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    call = {"agent": "researcher", "task": "apply the rules", "why": WHY, "spec": brief(tmp_path)}
    status, document = run_flow(tmp_path, call, policy="impatient")
    assert status == 0, document
    (result,) = document["results"]
    assert result["status"] == "completed"
    assert result["attestation"] == {"status": "valid", "reason": None}
    project = tmp_path / "project"
    assert not (project / IMPATIENT_BASH_MARKER).exists(), "bash before reading was blocked"
    assert (project / IMPATIENT_AFTER_MARKER).exists(), "bash after reading ran"
    squad_id = document["spec"]["squadId"]
    assert document["spec"]["chunks"] == 3
    # Confined as a squad child wherever the kernel can: its proof is then unwritable by it.
    assert document["spec"]["isolation"] == select_isolation(os.environ).support().mode
    # The proof is the squads' own: ``pi-squad verify`` re-checks it from the records.
    capsys.readouterr()
    monkeypatch.setenv("PI_SQUAD_ROOT", str(tmp_path / "root"))
    assert main(["verify", squad_id]) == 0
    assert "attestation valid" in capsys.readouterr().out


def test_a_child_that_answers_without_reading_fails_its_run(
    tmp_path: Path, runtime: PiRuntime
) -> None:
    call = {"agent": "researcher", "task": "apply the rules", "why": WHY, "spec": brief(tmp_path)}
    status, document = run_flow(tmp_path, call, policy="lazy")
    assert status == 1, document
    (result,) = document["results"]
    assert result["status"] == "failed"
    assert result["error"]["code"] == "ATTESTATION_INVALID"
    assert result["attestation"]["status"] == "missing"
