"""The broker the host serves (application/delegation/broker_service.py, ``HostedBroker``): a
worker's call is answered only for a live lease of the host's own session, checked against the
session's records on every call; another session is never read; one lease's calls run one at
a time."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import attrs
import pytest

from application.delegation.broker_service import NOT_LIVE, HostedBroker
from application.ports import BrokerRefusal, DelegationStore, DelegationTransaction
from domain.delegation.session import SessionState
from tests.fakes.broker import InMemoryBrokerHosting
from tests.unit.application.delegation.support import first_lease, job, run_request, world
from tests.unit.application.delegation.test_broker import SOURCE, outcomes, started_worker


class RecordingStore:
    """The world's store, recording which sessions were read and how many source reads of
    one lease ran at once."""

    def __init__(self, store: DelegationStore, read_seconds: float = 0.0) -> None:
        self._store = store
        self._read_seconds = read_seconds
        self._lock = threading.Lock()
        self._reading = 0
        self.most_at_once = 0
        self.sessions: list[str] = []

    def transaction(self, session: str) -> AbstractContextManager[DelegationTransaction]:
        self.sessions.append(session)
        return self._store.transaction(session)

    def snapshot(self, session: str) -> SessionState | None:
        self.sessions.append(session)
        return self._store.snapshot(session)

    def put_source(self, session: str, sha256: str, data: bytes) -> None:
        raise AssertionError("the broker never captures")

    def read_source(self, session: str, sha256: str) -> bytes:
        self.sessions.append(session)
        with self._overlap():
            time.sleep(self._read_seconds)
            return self._store.read_source(session, sha256)

    @contextmanager
    def _overlap(self) -> Iterator[None]:
        with self._lock:
            self._reading += 1
            self.most_at_once = max(self.most_at_once, self._reading)
        try:
            yield
        finally:
            with self._lock:
                self._reading -= 1


def served(read_seconds: float = 0.0) -> tuple[Any, HostedBroker, RecordingStore, Any, str]:
    w = world()
    _, broker, source_id = started_worker(w)
    store = RecordingStore(w.store, read_seconds)
    return w, HostedBroker(store, w.clock, "s1"), store, broker.lease, source_id


def test_a_live_lease_is_answered_by_the_hosts_broker_and_recorded() -> None:
    w, hosted, _, lease, source_id = served()
    assert hosted.answer(lease, "admit_tool", "read_source") == [True, "allowed"]
    text = hosted.answer(lease, "read_source", {"sourceId": source_id})
    assert isinstance(text, str)
    assert SOURCE.decode() in text
    assert [o["allowed"] for o in outcomes(w)] == [True]


def test_a_wrong_token_is_refused_and_nothing_is_recorded() -> None:
    w, hosted, _, lease, _ = served()
    forged = attrs.evolve(lease, token="not-the-token")
    for operation, argument in (("admit_tool", "read_source"), ("admit_request", None)):
        with pytest.raises(BrokerRefusal, match="not live"):
            hosted.answer(forged, operation, argument)
    assert outcomes(w) == []


def test_an_expired_lease_is_refused() -> None:
    w, hosted, _, lease, source_id = served()
    w.clock.advance(seconds=3600)  # past the job's deadline: the host settles it
    w.host().upkeep()
    with pytest.raises(BrokerRefusal) as refused:
        hosted.answer(lease, "read_source", {"sourceId": source_id})
    assert str(refused.value) == NOT_LIVE


def test_another_sessions_lease_is_refused_without_reading_that_session() -> None:
    _, hosted, store, lease, _ = served()
    elsewhere = attrs.evolve(lease, session="other")
    with pytest.raises(BrokerRefusal, match="serves session 's1' only"):
        hosted.answer(elsewhere, "admit_tool", "read_source")
    hosted.answer(lease, "admit_tool", "read_source")
    assert "other" not in store.sessions
    assert set(store.sessions) == {"s1"}


def test_an_unknown_operation_or_argument_shape_is_refused() -> None:
    _, hosted, _, lease, _ = served()
    with pytest.raises(BrokerRefusal, match="not a broker operation"):
        hosted.answer(lease, "save_state", {})
    with pytest.raises(BrokerRefusal, match="tool name"):
        hosted.answer(lease, "admit_tool", {"tool": "read_source"})
    with pytest.raises(BrokerRefusal, match="object of parameters"):
        hosted.answer(lease, "read_source", ["src"])


def test_one_leases_calls_run_one_at_a_time() -> None:
    _, hosted, store, lease, source_id = served(read_seconds=0.05)
    threads = [
        threading.Thread(target=hosted.answer, args=(lease, "read_source", {"sourceId": source_id}))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert store.most_at_once == 1


def test_leases_no_longer_live_are_dropped_when_a_new_one_arrives() -> None:
    w, hosted, _, lease, _ = served()
    hosted.answer(lease, "admit_request", None)
    assert hosted.serving() == 1
    w.clock.advance(seconds=3600)
    w.host().upkeep()
    fresh = first_lease(w, w.host().handle(run_request(job("k2"))))
    hosted.answer(fresh, "admit_request", None)
    assert hosted.serving() == 1


def test_the_in_memory_hosting_reaches_the_broker_as_a_bridge_would() -> None:
    _, hosted, _, lease, source_id = served()
    hosting = InMemoryBrokerHosting()
    endpoint = hosting.open(hosted)
    client = hosting.client(endpoint.address, lease)
    assert client.admit_tool("read_source") == (True, "allowed")
    assert SOURCE.decode() in client.read_source({"sourceId": source_id})
    forged = hosting.client(endpoint.address, attrs.evolve(lease, token="x"))
    assert forged.admit_request() is False
    with pytest.raises(BrokerRefusal, match="not live"):
        forged.cite_receipt({"sourceId": source_id})
