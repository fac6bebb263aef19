"""``BrokerClient``: a worker's bridge asks its host's evidence broker over a
``SocketTransport`` (``adapters/delegation/broker_wire.py``), presenting its lease with every
call.

One connection for the life of the bridge, one call at a time on it. The host's refusal is a
``BrokerRefusal``; a socket that cannot be reached, an answer over ``MAX_ANSWER_BYTES``, cut
short or malformed, or no answer within ``CALL_TIMEOUT_SECONDS`` is a ``BrokerUnavailable``,
which the worker's role treats as a refusal (fail closed) and after which every call fails.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Mapping
from typing import Any

from adapters.delegation.broker_wire import (
    MAX_ANSWER_BYTES,
    LineReader,
    WireError,
    encoded,
    lease_document,
    socket_path,
)
from application.ports import BrokerRefusal, WorkerBroker, WorkerLease
from domain.child_environment import DelegationWorkerChild

# A broker call waits for the session lock; the shim's own bound on a bridge answer is longer.
CALL_TIMEOUT_SECONDS = 30.0


class BrokerUnavailable(Exception):
    """The host's broker could not be asked, or did not answer usably."""


class BrokerClient:
    """``WorkerBroker`` over ``transport``, which sends one operation and its argument and
    returns the host's JSON value (raising ``BrokerRefusal`` for its refusal)."""

    def __init__(self, transport: Callable[[str, object], object]) -> None:
        self._call = transport

    def admit_tool(self, tool: str) -> tuple[bool, str]:
        try:
            value = self._call("admit_tool", tool)
        except BrokerRefusal as refusal:
            return False, str(refusal)
        if not (isinstance(value, list) and len(value) == 2 and isinstance(value[1], str)):
            raise BrokerUnavailable("the host's broker answered admit_tool malformed")
        return value[0] is True, value[1]

    def admit_request(self) -> bool:
        try:
            return self._call("admit_request", None) is True
        except BrokerRefusal:
            return False

    def _text(self, operation: str, params: Mapping[str, Any]) -> str:
        value = self._call(operation, dict(params))
        if not isinstance(value, str):
            raise BrokerUnavailable(f"the host's broker answered {operation} malformed")
        return value

    def read_source(self, params: Mapping[str, Any]) -> str:
        return self._text("read_source", params)

    def search_source(self, params: Mapping[str, Any]) -> str:
        return self._text("search_source", params)

    def cite_receipt(self, params: Mapping[str, Any]) -> str:
        return self._text("cite_receipt", params)


class SocketTransport:
    """One connection to the broker at ``address`` (made at the first call, kept for the life
    of the bridge), one call at a time on it, each presenting ``lease``."""

    def __init__(self, address: str, lease: WorkerLease) -> None:
        self._address = address
        self._lease = lease_document(lease)
        self._lock = threading.Lock()
        self._connection: socket.socket | None = None
        self._reader: LineReader | None = None
        self._broken: str | None = None

    def _connected(self) -> tuple[socket.socket, LineReader]:
        if self._connection is None or self._reader is None:
            connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            connection.settimeout(CALL_TIMEOUT_SECONDS)
            try:
                with socket_path(self._address) as name:
                    connection.connect(name)
            except OSError:
                connection.close()
                raise
            self._connection = connection
            self._reader = LineReader(connection, MAX_ANSWER_BYTES)
        return self._connection, self._reader

    def __call__(self, operation: str, argument: object) -> object:
        with self._lock:
            if self._broken is not None:
                raise BrokerUnavailable(self._broken)
            try:
                connection, reader = self._connected()
                request = {"lease": self._lease, "op": operation, "arg": argument}
                connection.sendall(encoded(request))
                answer = reader.line()
                if answer is None:
                    raise WireError("the host closed the broker connection")
            except (OSError, WireError) as error:
                self._broken = f"the host's broker at {self._address} is unavailable: {error}"
                self.close()
                raise BrokerUnavailable(self._broken) from None
        if answer.get("ok") is True and "value" in answer:
            return answer["value"]
        if isinstance(answer.get("refused"), str):
            raise BrokerRefusal(answer["refused"])
        raise BrokerUnavailable(f"the host's broker answered an error: {answer.get('error')!r}")

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
        self._connection, self._reader = None, None


def connect_broker(worker: DelegationWorkerChild) -> BrokerClient:
    """The client of the broker ``worker``'s environment names, for its lease (connected at
    its first call)."""
    return BrokerClient(SocketTransport(worker.broker_socket, worker.lease))


_conforms: type[WorkerBroker] = BrokerClient
