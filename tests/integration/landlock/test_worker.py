"""A delegated worker that escapes its tool list, on the real kernel: started as
``PiWorkerSetup`` confines it (with the read allowlist the host computes), a test double in the
worker's place (what a worker that got ``bash`` would run) writes its private directory and
nothing else: not its session's records (``state.json``), the user's project, the delegation
grant, another session's records or its launcher's agent directory; and reads only its private
directory, the system and the code it starts from: not those either, nor the user's home. Its
broker calls still work: the broker runs in the host (this test's process), reached on the
socket the worker's environment names."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from adapters.delegation.broker_server import UnixBrokerHosting
from adapters.delegation.workers import PiWorkerSetup
from adapters.isolation.confinement import confined_launch, remove_scratch
from adapters.isolation.protected_code import protected_code
from adapters.isolation.readable import worker_readable
from application.delegation.broker_service import HostedBroker
from application.ports import Confinement
from domain.child_environment import delegation_worker_environ
from tests.fakes.delegation import DelegationWorld
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


@attrs.frozen
class Host:
    """A session ``s1`` with a running attempt, its broker served on a socket in ``root``;
    beside it another session, the grant, the user's project, home and agent directory, each
    with a file in it; ``private``: the worker's directory."""

    root: Path
    project: Path
    home: Path
    user_agent: Path
    private: Path
    broker_address: str
    source_id: str
    world: DelegationWorld
    environment: dict[str, str]
    confinement: Confinement

    @property
    def sessions(self) -> Path:
        return self.root / "delegation" / "sessions"

    def run(self, argv: list[str]) -> dict[str, Any]:
        """What the confined double printed (JSON), started as ``PiRpcRuntime`` starts one."""
        launch = confined_launch(isolation(), argv, self.environment, self.confinement)
        try:
            code, out, err = start(launch.argv, cwd=self.private, env=launch.env)
        finally:
            remove_scratch(launch.scratch_dir)
        assert code == 0, err
        result: dict[str, Any] = json.loads(out)
        return result


@pytest.fixture
def host(tmp_path: Path, root: Path) -> Iterator[Host]:
    project, home = tmp_path / "project", tmp_path / "home"
    user_agent = home / ".pi" / "agent"
    sessions = root / "delegation" / "sessions"
    for directory in (sessions / "s1", sessions / "other", project, user_agent):
        directory.mkdir(parents=True)
    for path in (
        root / "delegation" / "policy.json",
        sessions / "s1" / "state.json",
        sessions / "other" / "state.json",
        project / "secret.py",
        home / ".netrc",
        user_agent / "auth.json",
    ):
        path.write_text("{}")
    private = tmp_path / "worker"
    private.mkdir()
    w = world()
    _, broker, source_id = started_worker(w)
    endpoint = UnixBrokerHosting(str(root)).open(HostedBroker(w.store, w.clock, "s1"))
    # The allowlist the delegation entrypoint gives real workers: the system, and the code a
    # worker's start runs (here: this Python and pi-squad, which the double imports).
    code = protected_code(pi_prefix=(), extension=None, environ={}, runtime_override=None)
    setup = PiWorkerSetup(
        squad_root=str(root),
        agent_dir=str(user_agent),
        broker_address=lambda: endpoint.address,
        isolation=SUPPORT,
        readable=lambda: worker_readable(code),
    )
    environment = {**delegation_worker_environ(broker.lease), **setup.prepare(str(private))}
    confinement = setup.confinement(str(private), broker.lease)
    assert confinement is not None
    assert confinement.readable is not None
    try:
        yield Host(
            root=root,
            project=project,
            home=home,
            user_agent=user_agent,
            private=private,
            broker_address=endpoint.address,
            source_id=source_id,
            world=w,
            environment=environment,
            confinement=confinement,
        )
    finally:
        endpoint.close()


def test_a_worker_that_escapes_its_tool_list_cannot_write_outside_its_directory(
    host: Host,
) -> None:
    root, sessions, private = host.root, host.sessions, host.private
    steps = {
        "its directory": f"write({str(private / 'notes')!r})",
        "its agent directory": f"write({str(private / 'agent' / 'settings.json')!r})",
        "its session's records": f"write({str(sessions / 's1' / 'state.json')!r})",
        "a file beside them": f"write({str(sessions / 's1' / 'planted.json')!r})",
        "the broker's directory": f"write({str(Path(host.broker_address).parent / 'x.sock')!r})",
        "the broker's socket": f"__import__('os').unlink({host.broker_address!r})",
        "the project": f"write({str(host.project / 'planted.py')!r})",
        "the grant": f"write({str(root / 'delegation' / 'policy.json')!r})",
        "another session": f"write({str(sessions / 'other' / 'state.json')!r})",
        "the user's agent directory": f"write({str(host.user_agent / 'auth.json')!r})",
    }
    results = host.run([sys.executable, "-B", "-c", OPERATIONS, json.dumps(list(steps.items()))])
    assert results == {
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
    assert not (host.project / "planted.py").exists()


def test_a_worker_that_escapes_its_tool_list_reads_only_its_allowlist(host: Host) -> None:
    root, sessions, private = host.root, host.sessions, host.private
    (private / "notes").write_text("mine")
    read = "open({!r}).read()".format
    listing = "__import__('os').listdir({!r})".format
    steps = {
        "its directory": read(str(private / "notes")),
        "its agent directory": listing(str(private / "agent")),
        "the system": read("/etc/passwd"),
        "pi-squad's code": read(str(REPOSITORY / "adapters" / "isolation" / "readable.py")),
        "its session's records": read(str(sessions / "s1" / "state.json")),
        "the grant": read(str(root / "delegation" / "policy.json")),
        "another session": read(str(sessions / "other" / "state.json")),
        "the sessions": listing(str(sessions)),
        "the squad root": listing(str(root)),
        "the project": read(str(host.project / "secret.py")),
        "the project's listing": listing(str(host.project)),
        "the user's home": read(str(host.home / ".netrc")),
        "the user's agent directory": read(str(host.user_agent / "auth.json")),
    }
    results = host.run([sys.executable, "-B", "-c", OPERATIONS, json.dumps(list(steps.items()))])
    allowed = {"its directory", "its agent directory", "the system", "pi-squad's code"}
    assert results == {name: "ok" if name in allowed else "EACCES" for name in steps}


def test_a_confined_worker_still_reaches_its_broker(host: Host) -> None:
    """Confined as it is, the worker's broker calls work: the host decided and recorded them."""
    results = host.run(
        [sys.executable, "-B", "-c", BROKER_CALLS, "", str(REPOSITORY), host.source_id]
    )
    assert results == {
        "admit_request": True,
        "admit_tool": [True, "allowed"],
        "read_source": "gamma alpha",
    }
    assert [o["tool"] for o in outcomes(host.world)] == ["read_source"]
