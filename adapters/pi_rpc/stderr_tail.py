"""The last bytes a child wrote to stderr, kept for ``Exited.stderr_tail`` and ``SpawnFailed``."""

from __future__ import annotations

import threading
from typing import IO, Final

from adapters.pi_rpc.stdout_records import READ_SIZE

STDERR_TAIL_BYTES: Final = 64 * 1024


class StderrTail:
    """Thread-safe: one thread drains the stream while others read the tail."""

    def __init__(self, limit: int = STDERR_TAIL_BYTES) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._tail = bytearray()

    def drain(self, stream: IO[bytes]) -> None:
        """Read ``stream`` to its end, keeping the last ``limit`` bytes. Raises what reading
        raises."""
        read = getattr(stream, "read1", stream.read)
        while chunk := read(READ_SIZE):
            with self._lock:
                self._tail += chunk
                excess = len(self._tail) - self._limit
                if excess > 0:
                    del self._tail[:excess]

    def text(self) -> str:
        """The tail decoded, invalid UTF-8 replaced."""
        with self._lock:
            data = bytes(self._tail)
        return data.decode("utf-8", "replace")
