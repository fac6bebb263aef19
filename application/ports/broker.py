"""The evidence broker between a delegated worker and the host that started it
(docs/delegation.md, "The worker role and the evidence broker").

The broker runs in the host's process (``application/delegation/broker_service.py``): the
worker's bridge reaches it through a ``WorkerBroker`` (a client of the host's endpoint), so
nothing in the worker's process tree writes the session's records. A host serves its broker
through ``BrokerHosting`` at an address its workers may connect to and never write.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from domain.delegation.lease import WorkerLease

__all__ = [
    "BrokerEndpoint",
    "BrokerHosting",
    "BrokerRefusal",
    "BrokerRequests",
    "WorkerBroker",
]


class BrokerRefusal(Exception):
    """A refused or malformed broker call; the message is shown to the worker."""


class WorkerBroker(Protocol):
    """The broker as one worker's bridge sees it: every decision is the host's, for the lease
    the worker runs under. A ``BrokerRefusal`` is the host's answer; any other exception means
    the broker could not be asked (the role fails closed)."""

    def admit_tool(self, tool: str) -> tuple[bool, str]:
        """One complete tool call, right before it executes (recorded either way)."""
        ...

    def admit_request(self) -> bool:
        """One model request debited before it is sent."""
        ...

    def read_source(self, params: Mapping[str, Any]) -> str: ...

    def search_source(self, params: Mapping[str, Any]) -> str: ...

    def cite_receipt(self, params: Mapping[str, Any]) -> str: ...


class BrokerRequests(Protocol):
    """The host's side: one worker call answered for the lease it presents."""

    def answer(self, lease: WorkerLease, operation: str, argument: object) -> object:
        """A JSON value; ``BrokerRefusal`` for a refused call (a lease that is not live, of
        another session, an unknown operation, a refused tool's arguments)."""
        ...


class BrokerEndpoint(Protocol):
    @property
    def address(self) -> str:
        """What a worker's bridge is given to reach the broker (``PI_SQUAD_DELEGATION_BROKER``)."""
        ...

    def close(self) -> None:
        """Stop serving; the address is gone and every open connection ends."""
        ...


class BrokerHosting(Protocol):
    def open(self, requests: BrokerRequests) -> BrokerEndpoint:
        """Serve ``requests`` at a new address in a place the workers cannot write."""
        ...
