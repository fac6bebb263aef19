"""The evidence broker's hosting in memory: ``open`` serves a ``BrokerRequests`` at an address
no socket has, and ``client`` reaches it as a worker's bridge would, every argument and answer
passed through JSON as on the wire."""

from __future__ import annotations

import json

import attrs

from adapters.delegation.broker_client import BrokerClient, BrokerUnavailable
from application.ports import BrokerEndpoint, BrokerHosting, BrokerRequests, WorkerLease


@attrs.define
class InMemoryEndpoint:
    address: str
    requests: BrokerRequests
    closed: bool = False

    def close(self) -> None:
        self.closed = True


@attrs.define
class InMemoryBrokerHosting:
    endpoints: list[InMemoryEndpoint] = attrs.field(factory=list)

    def open(self, requests: BrokerRequests) -> InMemoryEndpoint:
        endpoint = InMemoryEndpoint(f"/memory/broker-{len(self.endpoints)}.sock", requests)
        self.endpoints.append(endpoint)
        return endpoint

    def client(self, address: str, lease: WorkerLease) -> BrokerClient:
        """What a worker's bridge given ``address`` asks, for ``lease``."""

        def transport(operation: str, argument: object) -> object:
            endpoint = next(e for e in self.endpoints if e.address == address)
            if endpoint.closed:
                raise BrokerUnavailable(f"the broker at {address} is closed")
            answer = endpoint.requests.answer(lease, operation, json.loads(json.dumps(argument)))
            return json.loads(json.dumps(answer))

        return BrokerClient(transport)


_hosting: type[BrokerHosting] = InMemoryBrokerHosting
_endpoint: type[BrokerEndpoint] = InMemoryEndpoint
