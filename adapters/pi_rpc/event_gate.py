"""Where one child's events wait for its spawn to decide: queued from the start, delivered to
the sink in order on the child's dispatcher thread once released, dropped once muted, and none
taken after the last (``Exited``)."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

from application.ports import ChildEvent

logger = logging.getLogger(__name__)

Sink = Callable[[ChildEvent], None]


class EventGate:
    """Thread-safe. ``deliver`` is the dispatcher thread's body: it returns once the last
    event went by (delivered or dropped)."""

    def __init__(self, sink: Sink, child_id: str) -> None:
        self._sink = sink
        self._child_id = child_id
        self._lock = threading.Lock()
        self._muted = False  # spawn failed: nothing more reaches the sink
        self._finished = False  # the last event queued: nothing more is taken
        self._released = threading.Event()  # set when spawn has decided: deliver or drop
        self._events: queue.Queue[ChildEvent | None] = queue.Queue()  # None: no more

    def put(self, event: ChildEvent) -> None:
        with self._lock:
            if not self._finished:
                self._events.put(event)

    def put_last(self, event: ChildEvent) -> None:
        """``event`` is the last one: every later ``put`` is ignored."""
        with self._lock:
            self._events.put(event)
            self._events.put(None)
            self._finished = True

    def release(self) -> None:
        """The spawn succeeded: deliver what was queued so far, then the rest."""
        self._released.set()

    def mute(self) -> None:
        """The spawn failed: drop every event, queued or to come."""
        with self._lock:
            self._muted = True
        self._released.set()

    def deliver(self) -> None:
        self._released.wait()
        while (event := self._events.get()) is not None:
            with self._lock:
                muted = self._muted
            if muted:
                continue
            try:
                self._sink(event)
            except Exception:
                logger.exception("child %s: the event sink raised", self._child_id)
