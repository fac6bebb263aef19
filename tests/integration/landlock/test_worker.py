"""A delegated worker that escapes its tool list, on the real kernel: started as
``PiWorkerSetup`` confines it, a test double in the worker's place (what a worker that got
``bash`` would run) writes its private directory and its session's records, and nothing else:
not the user's project, the delegation grant, another session's records or its own launcher's
agent directory."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from adapters.delegation.workers import PiWorkerSetup
from adapters.isolation.confinement import confined_launch, remove_scratch
from domain.delegation.lease import WorkerLease
from tests.integration.landlock.support import OPERATIONS, SUPPORT, isolation, start

pytestmark = pytest.mark.skipif(
    SUPPORT.mode != "landlock", reason=f"Landlock not enforceable here: {SUPPORT.reason}"
)


def test_a_worker_that_escapes_its_tool_list_cannot_write_outside_its_directory(
    tmp_path: Path,
) -> None:
    root, project, user_agent = tmp_path / "root", tmp_path / "project", tmp_path / "agent"
    sessions = root / "delegation" / "sessions"
    for directory in (sessions / "mine", sessions / "other", project, user_agent):
        directory.mkdir(parents=True)
    for path in (root / "delegation" / "policy.json", sessions / "other" / "state.json"):
        path.write_text("{}")
    (user_agent / "auth.json").write_text("{}")
    private = tmp_path / "worker"
    private.mkdir()
    setup = PiWorkerSetup(squad_root=str(root), agent_dir=str(user_agent), isolation=SUPPORT)
    environment = setup.prepare(str(private))
    confinement = setup.confinement(str(private), lease("mine"))
    assert confinement is not None
    steps = {
        "its directory": f"write({str(private / 'notes')!r})",
        "its agent directory": f"write({str(private / 'agent' / 'settings.json')!r})",
        "its session's records": f"write({str(sessions / 'mine' / 'state.json')!r})",
        "the project": f"write({str(project / 'planted.py')!r})",
        "the grant": f"write({str(root / 'delegation' / 'policy.json')!r})",
        "another session": f"write({str(sessions / 'other' / 'state.json')!r})",
        "the user's agent directory": f"write({str(user_agent / 'auth.json')!r})",
    }
    argv = [sys.executable, "-c", OPERATIONS, json.dumps(list(steps.items()))]
    launch = confined_launch(isolation(), argv, environment, confinement)
    try:
        code, out, err = start(launch.argv, cwd=private, env=launch.env)
    finally:
        remove_scratch(launch.scratch_dir)
    assert code == 0, err
    assert json.loads(out) == {
        "its directory": "ok",
        "its agent directory": "ok",
        "its session's records": "ok",
        "the project": "EACCES",
        "the grant": "EACCES",
        "another session": "EACCES",
        "the user's agent directory": "EACCES",
    }
    assert (root / "delegation" / "policy.json").read_text() == "{}"
    assert not (project / "planted.py").exists()


def lease(session: str) -> WorkerLease:
    return WorkerLease(
        session=session,
        batch_id="b",
        job_id="j",
        attempt_id="a",
        token="t",
        packet_digest="d",
    )
