"""The host's evidence broker on a real UNIX socket (adapters/delegation/broker_server.py and
broker_client.py): the client a worker's bridge uses gets the host's answers for its lease; a
forged or expired lease is refused; an oversized or malformed message is refused and its
connection closed; the socket lies in a directory only the host writes and goes when the
endpoint closes."""

from __future__ import annotations

import json
import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from adapters.delegation.broker_client import (
    BrokerClient,
    BrokerUnavailable,
    SocketTransport,
    connect_broker,
)
from adapters.delegation.broker_server import UnixBrokerEndpoint, UnixBrokerHosting
from adapters.delegation.broker_wire import MAX_REQUEST_BYTES, lease_document, socket_path
from application.delegation.broker_service import HostedBroker
from application.ports import BrokerRefusal, WorkerLease
from domain.child_environment import (
    ChildEnvironment,
    DelegationWorkerChild,
    broker_socket_environ,
    delegation_worker_environ,
)
from tests.integration.broker_support import ROOT_KINDS, squad_root
from tests.unit.application.delegation.support import world
from tests.unit.application.delegation.test_broker import SOURCE, outcomes, started_worker


@pytest.fixture(params=ROOT_KINDS)
def root(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    with squad_root(request.param, tmp_path) as path:
        yield path


@attrs.define
class Served:
    world: Any
    endpoint: UnixBrokerEndpoint
    lease: WorkerLease
    source_id: str

    def client(self, lease: WorkerLease | None = None) -> BrokerClient:
        return BrokerClient(SocketTransport(self.endpoint.address, lease or self.lease))


@pytest.fixture
def served(root: Path) -> Iterator[Served]:
    w = world()
    _, broker, source_id = started_worker(w)
    endpoint = UnixBrokerHosting(str(root)).open(HostedBroker(w.store, w.clock, "s1"))
    try:
        yield Served(w, endpoint, broker.lease, source_id)
    finally:
        endpoint.close()


def exchange(address: str, payload: bytes) -> tuple[dict[str, Any], bool]:
    """The answer to ``payload`` sent as is, and whether the server then closed the
    connection."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(5)
        with socket_path(address) as name:
            connection.connect(name)
        connection.sendall(payload)
        received = b""
        while b"\n" not in received:
            received += connection.recv(65536)
        line, rest = received.split(b"\n", 1)
        connection.settimeout(0.5)
        try:
            closed = rest == b"" and connection.recv(1) == b""
        except TimeoutError:
            closed = False
    return json.loads(line), closed


def test_the_workers_client_gets_the_hosts_answers_for_its_lease(served: Served) -> None:
    client = served.client()
    assert client.admit_request() is True
    assert client.admit_tool("read_source") == (True, "allowed")
    text = client.read_source({"sourceId": served.source_id, "lineStart": 1, "lineEnd": 1})
    assert text.endswith("alpha line\n")
    assert '"hits":[' in client.search_source({"query": "alpha"})
    assert served.source_id in client.cite_receipt({"sourceId": served.source_id})
    # The decision was the host's, recorded in the session it serves.
    assert [o["allowed"] for o in outcomes(served.world)] == [True]


def test_a_refusal_of_the_broker_reaches_the_worker_as_one(served: Served) -> None:
    with pytest.raises(BrokerRefusal, match="line range impossible"):
        served.client().read_source({"sourceId": served.source_id, "lineStart": 99})


def test_a_forged_lease_is_refused(served: Served) -> None:
    forged = served.client(attrs.evolve(served.lease, token="forged"))
    assert forged.admit_request() is False
    allowed, reason = forged.admit_tool("read_source")
    assert not allowed
    assert "not live" in reason
    with pytest.raises(BrokerRefusal, match="not live"):
        forged.read_source({"sourceId": served.source_id})
    assert outcomes(served.world) == []


def test_an_expired_lease_is_refused(served: Served) -> None:
    client = served.client()
    assert client.admit_request() is True
    served.world.clock.advance(seconds=3600)
    served.world.host().upkeep()
    assert client.admit_request() is False
    with pytest.raises(BrokerRefusal, match="not live"):
        client.read_source({"sourceId": served.source_id})


def test_an_oversized_message_is_refused_and_its_connection_closed(served: Served) -> None:
    request = {"lease": lease_document(served.lease), "op": "search_source"}
    oversized = json.dumps({**request, "arg": {"query": "x" * MAX_REQUEST_BYTES}}).encode()
    answer, closed = exchange(served.endpoint.address, oversized + b"\n")
    assert answer["ok"] is False
    assert f"over {MAX_REQUEST_BYTES} bytes" in answer["error"]
    assert closed
    # A message that is not JSON, or not an object, is refused the same way.
    for malformed in (b"not json\n", b"[1, 2]\n"):
        answer, closed = exchange(served.endpoint.address, malformed)
        assert (answer["ok"], closed) == (False, True)
    # The server serves on: a well-formed call still gets its answer.
    assert served.client().admit_tool("read_source") == (True, "allowed")


def test_a_malformed_lease_is_refused_and_the_connection_kept(served: Served) -> None:
    document = {"lease": {"session": "s1"}, "op": "admit_request"}
    answer, closed = exchange(served.endpoint.address, json.dumps(document).encode() + b"\n")
    assert answer["ok"] is False
    assert "lease fields" in answer["refused"]
    assert not closed


class FailingOnce:
    """The world's store, whose next ``snapshot`` fails as a broken disk would."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.fail = True

    def snapshot(self, session: str) -> Any:
        if self.fail:
            self.fail = False
            raise OSError("scripted read failure")
        return self._store.snapshot(session)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_a_failing_store_fails_that_call_closed_and_the_connection_serves_on(root: Path) -> None:
    w = world()
    _, broker, _ = started_worker(w)
    endpoint = UnixBrokerHosting(str(root)).open(HostedBroker(FailingOnce(w.store), w.clock, "s1"))
    try:
        client = BrokerClient(SocketTransport(endpoint.address, broker.lease))
        with pytest.raises(BrokerUnavailable, match="failed"):
            client.admit_tool("read_source")
        assert client.admit_tool("read_source") == (True, "allowed")
    finally:
        endpoint.close()


def test_the_socket_lies_in_a_directory_only_the_host_writes(served: Served, root: Path) -> None:
    path = Path(served.endpoint.address)
    assert path.parent == root / "delegation" / "brokers"
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_ISSOCK(path.stat().st_mode)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_closing_the_endpoint_removes_the_socket_and_fails_the_client_closed(
    served: Served,
) -> None:
    client = served.client()
    assert client.admit_request() is True
    served.endpoint.close()
    assert not os.path.exists(served.endpoint.address)
    with pytest.raises(BrokerUnavailable):
        client.admit_request()
    with pytest.raises(BrokerUnavailable):
        served.client().admit_tool("read_source")


def test_a_socket_whose_host_died_is_removed_by_the_next_host(root: Path) -> None:
    brokers = root / "delegation" / "brokers"
    brokers.mkdir(parents=True)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with socket_path(str(brokers / "dead.sock")) as name:
        dead.bind(name)
    dead.close()  # bound, never listening: what a killed host leaves
    w = world()
    endpoint = UnixBrokerHosting(str(root)).open(HostedBroker(w.store, w.clock, "s1"))
    try:
        assert sorted(p.name for p in brokers.iterdir()) == [Path(endpoint.address).name]
    finally:
        endpoint.close()


def test_a_worker_environment_connects_to_the_socket_it_names(served: Served) -> None:
    environ = {
        **delegation_worker_environ(served.lease),
        **broker_socket_environ(served.endpoint.address),
    }
    worker = ChildEnvironment.from_environ(environ, "posix")
    assert isinstance(worker, DelegationWorkerChild)
    client = connect_broker(worker)
    assert client.admit_tool("read_source") == (True, "allowed")
    assert SOURCE.decode().splitlines()[0] in client.read_source({"sourceId": served.source_id})
