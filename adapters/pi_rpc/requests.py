"""RPC requests to one child and their answers: fresh ids, the table of requests still waiting
for their ``response`` record, and failing them all once the child can no longer answer."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

import attrs


class RequestFailed(Exception):
    """An RPC request got no acceptable answer."""


@attrs.define
class _Pending:
    done: threading.Event = attrs.field(factory=threading.Event)
    response: dict[str, Any] | None = None
    error: str = ""


class PendingRequests:
    """Thread-safe. Once ``close`` has been called no request waits any more: the ones waiting
    fail with its reason, and a new one fails at once (the child has exited)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._slots: dict[str, _Pending] = {}
        self._count = 0
        self._closed = False

    def new_id(self, prefix: str) -> str:
        """``<prefix>-<n>``, ``n`` counting every id of this child."""
        with self._lock:
            self._count += 1
            return f"{prefix}-{self._count}"

    def exchange(
        self,
        command: Mapping[str, Any],
        timeout: float,
        write: Callable[[Mapping[str, Any]], None],
    ) -> dict[str, Any]:
        """Write ``command`` with a fresh id and wait for its response record (any ``success``).

        Raises ``RequestFailed`` on timeout, when ``write`` raises it, or when the child can no
        longer answer (``close``).
        """
        request_id = self.new_id("req")
        slot = _Pending()
        with self._lock:
            if self._closed:
                raise RequestFailed("the child has exited")
            self._slots[request_id] = slot
        try:
            write({**command, "id": request_id})
            if not slot.done.wait(timeout):
                raise RequestFailed(f"no answer to {command.get('type')} within {timeout:g} s")
            if slot.response is None:
                raise RequestFailed(f"no answer to {command.get('type')}: {slot.error}")
            return slot.response
        finally:
            with self._lock:
                self._slots.pop(request_id, None)

    def answer(self, response: dict[str, Any]) -> None:
        """Hand a ``response`` record to the request with its id, if one is waiting."""
        request_id = response.get("id")
        with self._lock:
            slot = self._slots.get(request_id) if isinstance(request_id, str) else None
        if slot is None:
            return
        slot.response = response
        slot.done.set()

    def close(self, reason: str) -> None:
        """No answer can come any more: fail the waiting requests with ``reason``."""
        with self._lock:
            self._closed = True
            slots = list(self._slots.values())
        for slot in slots:
            if not slot.done.is_set():
                slot.error = reason
                slot.done.set()
