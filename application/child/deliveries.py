"""Deliveries a spec child has observed, committed in groups behind Pi's back (contract §8).

``message_end`` matches a finalised tool result to its pending read and hands it here; it does
not wait. A drain on a helper thread takes every delivery received so far as one group and
commits it (one fresh canonical read made after all of them arrived, one durable write).
``settle`` waits until every delivery received before it was called is committed or refused:
the child calls it at Pi's ``context`` event (before every model call, so the model's next
turn, and any tool it asks for there, comes after the commits), in the guard and in the
bootstrap, at ``session_shutdown`` and at end of input. A delivery whose group failed counts as
not read: the guard stays closed and the chunk is read again, as after a crash before commit.
A settle that runs out of time says so; that group goes on and may still commit.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from typing import Generic, TypeVar

_Delivery = TypeVar("_Delivery")


class DeliveriesUnsettled(Exception):
    """``settle`` ran out of time with deliveries still being committed."""


class DeliveryQueue(Generic[_Delivery]):
    """Deliveries in arrival order; ``commit_group`` receives each drained group, in order.

    One drain at a time: a delivery received while a group commits goes into the next group.
    A group's failure (what ``commit_group`` raised) is kept until a ``settle`` that reports
    it takes it, once; later groups are still committed.
    """

    def __init__(
        self, commit_group: Callable[[Sequence[_Delivery]], None], executor: Executor
    ) -> None:
        self._commit_group = commit_group
        self._executor = executor
        self._changed = threading.Condition()
        self._waiting: list[_Delivery] = []
        self._received = 0
        self._settled = 0
        # Set before a drain is submitted and cleared by that drain once nothing waits, so a
        # drain that ran inline (or ended just now) never leaves later deliveries stranded.
        self._draining = False
        self._drain: Future[None] | None = None
        self._failure: Exception | None = None

    def put(self, delivery: _Delivery) -> None:
        with self._changed:
            self._waiting.append(delivery)
            self._received += 1
            if self._draining:
                return
            self._draining = True
        try:
            drain = self._executor.submit(self._drain_all)
        except BaseException:
            with self._changed:
                self._draining = False
            raise
        with self._changed:
            self._drain = drain

    def settle(self, timeout: float, *, report: bool = True) -> None:
        """Return once every delivery received so far has been committed or refused. With
        ``report``, raise the failure of a group not reported yet; ``DeliveriesUnsettled`` when
        ``timeout`` seconds pass first (the group still running may yet commit)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            target = self._received
            drain = self._drain
        if drain is not None:
            # A deferred executor (a world that must not see two threads) runs the drain here,
            # in the thread that asks after it; a pool's drain is left to run on its own.
            with contextlib.suppress(TimeoutError):
                drain.exception(timeout=0)
        with self._changed:
            settled = self._changed.wait_for(
                lambda: self._settled >= target, timeout=max(0.0, deadline - time.monotonic())
            )
            failure = self._failure if report else None
            if report:
                self._failure = None
            unsettled = target - self._settled
        if failure is not None:
            raise failure
        if not settled:
            raise DeliveriesUnsettled(
                f"{unsettled} deliveries were still being committed after {timeout:g} s"
            )

    @property
    def unsettled(self) -> int:
        with self._changed:
            return self._received - self._settled

    def _drain_all(self) -> None:
        while True:
            with self._changed:
                group, self._waiting = self._waiting, []
                if not group:
                    self._draining = False
                    self._changed.notify_all()
                    return
            try:
                self._commit_group(group)
            except Exception as exc:  # kept for a settle that reports it; the drain goes on
                with self._changed:
                    if self._failure is None:
                        self._failure = exc
            finally:
                with self._changed:
                    self._settled += len(group)
                    self._changed.notify_all()
