"""``HostedBroker``: the evidence broker the host serves to the workers it started
(``BrokerRequests``; docs/delegation.md, "The worker role and the evidence broker").

One host serves one session. A call presenting a lease of another session is refused before
the store is read, so the server never reads another session; every other call first checks
the lease against the session's records (the attempt's token, still running), then is
answered by that lease's ``EvidenceBroker``. Calls of one lease run one at a time, whichever
connection they came on: the broker pairs each admitted tool with the call that runs it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from application.delegation.broker import EvidenceBroker
from application.ports import BrokerRefusal, Clock, DelegationStore, WorkerLease
from domain.delegation.worker_side import live_attempt

NOT_LIVE = "the lease is not live: the attempt was revoked, settled or never started"


def _tool(broker: EvidenceBroker, argument: object) -> object:
    if not isinstance(argument, str):
        raise BrokerRefusal("admit_tool takes a tool name")
    allowed, reason = broker.admit_tool(argument)
    return [allowed, reason]


def _call(serve: Callable[[EvidenceBroker, Mapping[str, Any]], str]) -> Callable[..., object]:
    def served(broker: EvidenceBroker, argument: object) -> object:
        if not isinstance(argument, Mapping):
            raise BrokerRefusal("a broker tool takes an object of parameters")
        return serve(broker, argument)

    return served


OPERATIONS: Mapping[str, Callable[[EvidenceBroker, object], object]] = {
    "admit_tool": _tool,
    "admit_request": lambda broker, _: broker.admit_request(),
    "read_source": _call(EvidenceBroker.read_source),
    "search_source": _call(EvidenceBroker.search_source),
    "cite_receipt": _call(EvidenceBroker.cite_receipt),
}
"""What a worker may ask, each mapped onto one ``EvidenceBroker`` method."""


class HostedBroker:
    """``BrokerRequests`` for ``session``'s live leases, over the host's store and clock."""

    def __init__(self, store: DelegationStore, clock: Clock, session: str) -> None:
        self._store = store
        self._clock = clock
        self.session = session
        self._lock = threading.Lock()
        # One broker and one call lock per live lease; a lease no longer live is dropped when
        # the next new lease arrives, so the table holds this host's running attempts.
        self._brokers: dict[WorkerLease, tuple[EvidenceBroker, threading.Lock]] = {}

    def _live(self, lease: WorkerLease) -> bool:
        state = self._store.snapshot(self.session)
        return state is not None and live_attempt(state, lease) is not None

    def _broker(self, lease: WorkerLease) -> tuple[EvidenceBroker, threading.Lock]:
        with self._lock:
            found = self._brokers.get(lease)
            if found is None:
                state = self._store.snapshot(self.session)
                for known in list(self._brokers):
                    if state is None or live_attempt(state, known) is None:
                        del self._brokers[known]
                found = (EvidenceBroker(self._store, lease, self._clock), threading.Lock())
                self._brokers[lease] = found
            return found

    def answer(self, lease: WorkerLease, operation: str, argument: object) -> object:
        serve = OPERATIONS.get(operation)
        if serve is None:
            raise BrokerRefusal(f"{operation!r} is not a broker operation")
        if lease.session != self.session:
            raise BrokerRefusal(f"this host serves session {self.session!r} only")
        if not self._live(lease):
            raise BrokerRefusal(NOT_LIVE)
        broker, one_at_a_time = self._broker(lease)
        with one_at_a_time:
            return serve(broker, argument)

    def serving(self) -> int:
        """How many leases have a broker now (bounded by the live ones)."""
        with self._lock:
            return len(self._brokers)
