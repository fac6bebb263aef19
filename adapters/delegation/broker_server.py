"""``UnixBrokerHosting``: the host serves its evidence broker on a pathname UNIX socket
(``adapters/delegation/broker_wire.py``).

The socket lies in ``<squad root>/delegation/brokers/`` (mode 0700), which a confined worker
cannot write (Landlock grants it only its private directory, its scratch and ``/dev/null``;
bubblewrap mounts the squad root read-only): it may connect, never replace the socket or plant
another. Each connection is served on its own thread, one request at a time; a message over
``MAX_REQUEST_BYTES`` or not JSON is answered with an error and the connection closed. Closing
the endpoint removes the socket and ends every connection. A socket left by a host that died
(nobody listening) is removed by the next host that opens one.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import sys
import threading
from typing import Any

from adapters.delegation.broker_wire import (
    MAX_REQUEST_BYTES,
    LineReader,
    WireError,
    encoded,
    lease_of,
    socket_path,
)
from application.ports import BrokerEndpoint, BrokerHosting, BrokerRefusal, BrokerRequests

BROKERS_DIR = ("delegation", "brokers")
SOCKET_SUFFIX = ".sock"
MAX_CONNECTIONS = 64
ACCEPT_POLL_SECONDS = 0.2
_STALE_SCAN_LIMIT = 256


class UnixBrokerHosting:
    def __init__(self, squad_root: str) -> None:
        self._directory = os.path.join(squad_root, *BROKERS_DIR)

    def open(self, requests: BrokerRequests) -> UnixBrokerEndpoint:
        os.makedirs(self._directory, mode=0o700, exist_ok=True)
        os.chmod(self._directory, 0o700)
        _remove_stale(self._directory)
        path = os.path.join(self._directory, secrets.token_hex(8) + SOCKET_SUFFIX)
        return UnixBrokerEndpoint(path, requests)


class UnixBrokerEndpoint:
    def __init__(self, path: str, requests: BrokerRequests) -> None:
        self._path = path
        self._requests = requests
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._closed = False
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with socket_path(path) as name:
                self._listener.bind(name)
            os.chmod(path, 0o600)
            self._listener.listen(MAX_CONNECTIONS)
            # accept() wakes to see ``close``: closing a socket another thread waits on does not.
            self._listener.settimeout(ACCEPT_POLL_SECONDS)
        except BaseException:
            self._listener.close()
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise
        threading.Thread(target=self._accept, name="delegate-broker", daemon=True).start()

    @property
    def address(self) -> str:
        return self._path

    def _accept(self) -> None:
        while not self._closed:
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed
            connection.settimeout(None)
            with self._lock:
                refused = self._closed or len(self._connections) >= MAX_CONNECTIONS
                if not refused:
                    self._connections.add(connection)
            if refused:
                connection.close()
                continue
            threading.Thread(
                target=self._serve, args=(connection,), name="delegate-broker-call", daemon=True
            ).start()

    def _serve(self, connection: socket.socket) -> None:
        reader = LineReader(connection, MAX_REQUEST_BYTES)
        try:
            while True:
                try:
                    message = reader.line()
                except WireError as error:
                    connection.sendall(encoded({"ok": False, "error": str(error)}))
                    return
                if message is None:
                    return
                connection.sendall(encoded(self._answer(message)))
        except OSError:
            return  # the worker went
        finally:
            with self._lock:
                self._connections.discard(connection)
            connection.close()

    def _answer(self, message: dict[str, Any]) -> dict[str, Any]:
        try:
            lease = lease_of(message.get("lease"))
            operation = message.get("op")
            if not isinstance(operation, str):
                raise WireError("op must be a string")
            return {
                "ok": True,
                "value": self._requests.answer(lease, operation, message.get("arg")),
            }
        except BrokerRefusal as refusal:
            return {"ok": False, "refused": str(refusal)}
        except WireError as error:
            return {"ok": False, "refused": f"malformed broker call: {error}"}
        except Exception as error:  # the store failed: this call fails closed, the next may not
            sys.stderr.write(f"pi-squad: delegate broker: {type(error).__name__}: {error}\n")
            return {"ok": False, "error": f"the host's broker failed ({type(error).__name__})"}

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            connections = list(self._connections)
        self._listener.close()
        with contextlib.suppress(OSError):
            os.unlink(self._path)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


def _remove_stale(directory: str) -> None:
    """Sockets nobody listens on (their host died) removed; a live host's left alone."""
    with os.scandir(directory) as entries:
        stale = [e.path for _, e in zip(range(_STALE_SCAN_LIMIT), entries, strict=False)]
    for path in stale:
        if not path.endswith(SOCKET_SUFFIX):
            continue
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.settimeout(1.0)
        try:
            with socket_path(path) as name:
                probe.connect(name)
        except ConnectionRefusedError:
            with contextlib.suppress(OSError):
                os.unlink(path)
        except OSError:
            pass
        finally:
            probe.close()


_conforms: type[BrokerHosting] = UnixBrokerHosting
_endpoint_conforms: type[BrokerEndpoint] = UnixBrokerEndpoint
