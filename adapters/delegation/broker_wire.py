"""The broker's wire between a worker's bridge and its host: newline-delimited JSON over a
pathname UNIX socket, one request line answered by one line, bounded both ways.

A request: ``{"lease": {session, batch, job, attempt, token, digest}, "op": ..., "arg": ...}``.
An answer: ``{"ok": true, "value": ...}``, ``{"ok": false, "refused": reason}`` (the host's
refusal, shown to the worker), or ``{"ok": false, "error": problem}`` (the message itself was
unusable: the connection is closed after it).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Iterator
from typing import Any

from domain.delegation.lease import WorkerLease

# A request holds a lease and a tool's parameters (a search names at most 64 source IDs):
# a few KiB. An answer holds at most 16 KiB of source text, escaped.
MAX_REQUEST_BYTES = 64 * 1024
MAX_ANSWER_BYTES = 1024 * 1024
LEASE_FIELDS = (
    ("session", "session"),
    ("batch", "batch_id"),
    ("job", "job_id"),
    ("attempt", "attempt_id"),
    ("token", "token"),
    ("digest", "packet_digest"),
)


# sun_path holds 108 bytes with its terminating NUL: a longer path is reached through its
# directory's descriptor (``socket_path``).
MAX_SUN_PATH_BYTES = 107


@contextlib.contextmanager
def socket_path(path: str) -> Iterator[str]:
    """A name ``bind`` and ``connect`` accept for ``path``: itself, or for a path too long for
    a socket address, the same file through ``/proc/self/fd`` and its directory's descriptor
    (Linux), held open while the name is in use."""
    if len(os.fsencode(path)) <= MAX_SUN_PATH_BYTES:
        yield path
        return
    # O_PATH where there is one (Linux): the directory need not be readable, only searchable.
    flags = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY
    directory = os.open(os.path.dirname(path), flags)
    try:
        yield f"/proc/self/fd/{directory}/{os.path.basename(path)}"
    finally:
        os.close(directory)


class WireError(Exception):
    """A message that is not one: over its bound, not a JSON object, cut short."""


def lease_document(lease: WorkerLease) -> dict[str, str]:
    return {key: getattr(lease, field) for key, field in LEASE_FIELDS}


def lease_of(document: object) -> WorkerLease:
    if not isinstance(document, dict) or set(document) != {key for key, _ in LEASE_FIELDS}:
        raise WireError("lease must be an object with exactly the lease fields")
    values = [document[key] for key, _ in LEASE_FIELDS]
    if not all(isinstance(value, str) for value in values):
        raise WireError("every lease field is a string")
    return WorkerLease(*values)


def encoded(document: dict[str, Any]) -> bytes:
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


class LineReader:
    """Lines of one connection, each at most ``limit`` bytes before its newline."""

    def __init__(self, connection: socket.socket, limit: int) -> None:
        self._connection = connection
        self._limit = limit
        self._buffer = b""

    def line(self) -> dict[str, Any] | None:
        """The next message; ``None`` when the peer closed between messages."""
        while b"\n" not in self._buffer:
            if len(self._buffer) > self._limit:
                raise WireError(f"a message is over {self._limit} bytes")
            chunk = self._connection.recv(min(65536, self._limit + 1))
            if not chunk:
                if self._buffer:
                    raise WireError("the connection closed inside a message")
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        if len(line) > self._limit:
            raise WireError(f"a message is over {self._limit} bytes")
        try:
            document = json.loads(line)
        except ValueError:
            raise WireError("a message is not JSON") from None
        if not isinstance(document, dict):
            raise WireError("a message is not a JSON object")
        return document
