"""A delegated worker that escapes its tool list, on the real kernel: started as
``PiWorkerSetup`` confines it, a test double in the worker's place (what a worker that got
``bash`` would run) writes its private directory and nothing else: not its session's records
(``state.json``), the user's project, the delegation grant, another session's records or its
launcher's agent directory. Its broker calls still work: the broker runs in the host (this
test's process), reached on the socket the worker's environment names."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.delegation.broker_server import UnixBrokerHosting
from adapters.delegation.workers import PiWorkerSetup
from adapters.isolation.confinement import confined_launch, remove_scratch
from application.delegation.broker_service import HostedBroker
from domain.child_environment import delegation_worker_environ
from tests.integration.broker_support import ROOT_KINDS, squad_root
from tests.integration.landlock.support import OPERATIONS, SUPPORT, isolation, start
from tests.unit.application.delegation.support import world
from tests.unit.application.delegation.test_broker import outcomes, started_worker

pytestmark = pytest.mark.skipif(
    SUPPORT.mode != "landlock", reason=f"Landlock not enforceable here: {SUPPORT.reason}"
)

REPOSITORY = Path(__file__).resolve().parents[3]
# The worker's bridge's path to the broker, run by the confined double after its writes.
BROKER_CALLS = textwrap.dedent(
    """
    import json, os, sys
    sys.path.insert(0, sys.argv[2])
    from adapters.delegation.broker_client import connect_broker
    from domain.child_environment import ChildEnvironment

    worker = ChildEnvironment.from_environ(os.environ, "posix")
    broker = connect_broker(worker)
    calls = {
        "admit_request": broker.admit_request(),
        "admit_tool": list(broker.admit_tool("read_source")),
        "read_source": broker.read_source({"sourceId": sys.argv[3]}).splitlines()[-1],
    }
    print(json.dumps(calls))
    """
)


@pytest.fixture(params=ROOT_KINDS)
def root(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    with squad_root(request.param, tmp_path) as path:
        yield path


def test_a_worker_that_escapes_its_tool_list_cannot_write_outside_its_directory(
    tmp_path: Path, root: Path
) -> None:
    project, user_agent = tmp_path / "project", tmp_path / "agent"
    sessions = root / "delegation" / "sessions"
    for directory in (sessions / "s1", sessions / "other", project, user_agent):
        directory.mkdir(parents=True)
    for path in (
        root / "delegation" / "policy.json",
        sessions / "s1" / "state.json",
        sessions / "other" / "state.json",
    ):
        path.write_text("{}")
    (user_agent / "auth.json").write_text("{}")
    private = tmp_path / "worker"
    private.mkdir()
    # The host: a session with a running attempt, its broker served on a socket in the root.
    w = world()
    _, broker, source_id = started_worker(w)
    endpoint = UnixBrokerHosting(str(root)).open(HostedBroker(w.store, w.clock, "s1"))
    setup = PiWorkerSetup(
        squad_root=str(root),
        agent_dir=str(user_agent),
        broker_address=lambda: endpoint.address,
        isolation=SUPPORT,
    )
    environment = {**delegation_worker_environ(broker.lease), **setup.prepare(str(private))}
    confinement = setup.confinement(str(private), broker.lease)
    assert confinement is not None
    steps = {
        "its directory": f"write({str(private / 'notes')!r})",
        "its agent directory": f"write({str(private / 'agent' / 'settings.json')!r})",
        "its session's records": f"write({str(sessions / 's1' / 'state.json')!r})",
        "a file beside them": f"write({str(sessions / 's1' / 'planted.json')!r})",
        "the broker's directory": f"write({str(Path(endpoint.address).parent / 'x.sock')!r})",
        "the broker's socket": f"__import__('os').unlink({endpoint.address!r})",
        "the project": f"write({str(project / 'planted.py')!r})",
        "the grant": f"write({str(root / 'delegation' / 'policy.json')!r})",
        "another session": f"write({str(sessions / 'other' / 'state.json')!r})",
        "the user's agent directory": f"write({str(user_agent / 'auth.json')!r})",
    }
    writes = [sys.executable, "-B", "-c", OPERATIONS, json.dumps(list(steps.items()))]
    calls = [sys.executable, "-B", "-c", BROKER_CALLS, "", str(REPOSITORY), source_id]
    try:
        results = []
        for argv in (writes, calls):
            launch = confined_launch(isolation(), argv, environment, confinement)
            try:
                code, out, err = start(launch.argv, cwd=private, env=launch.env)
            finally:
                remove_scratch(launch.scratch_dir)
            assert code == 0, err
            results.append(json.loads(out))
    finally:
        endpoint.close()
    assert results[0] == {
        "its directory": "ok",
        "its agent directory": "ok",
        "its session's records": "EACCES",
        "a file beside them": "EACCES",
        "the broker's directory": "EACCES",
        "the broker's socket": "EACCES",
        "the project": "EACCES",
        "the grant": "EACCES",
        "another session": "EACCES",
        "the user's agent directory": "EACCES",
    }
    assert (sessions / "s1" / "state.json").read_text() == "{}"
    assert (root / "delegation" / "policy.json").read_text() == "{}"
    assert not (project / "planted.py").exists()
    # Confined as it is, the worker's broker calls work: the host decided and recorded them.
    assert results[1] == {
        "admit_request": True,
        "admit_tool": [True, "allowed"],
        "read_source": "gamma alpha",
    }
    assert [o["tool"] for o in outcomes(w)] == ["read_source"]
