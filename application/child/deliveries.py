"""Deliveries a spec child has observed, committed in groups behind Pi's back (contract §8).

``message_end`` matches a finalised tool result to its pending read and hands it here; it does
not wait. A drain on a helper thread takes every delivery received so far as one group and
commits it (one fresh canonical read made after all of them arrived, one durable write).
``settle`` waits until every delivery received before it was called is committed or refused:
the child calls it at Pi's ``context`` event (before every model call, so the model's next
turn, and any tool it asks for there, comes after the commits), in the guard and in the
bootstrap, and before the process ends. A delivery that has not settled counts as not read:
the guard stays closed and the chunk is read again, exactly as after a crash before commit.
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
    A group's failure (what ``commit_group`` raised) is kept and raised by the next ``settle``,
    once; later groups are still committed.
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
        self._drain: Future[None] | None = None
        self._failure: BaseException | None = None

    def put(self, delivery: _Delivery) -> None:
        with self._changed:
            self._waiting.append(delivery)
            self._received += 1
            if self._drain is None:
                self._drain = self._executor.submit(self._drain_all)

    def settle(self, timeout: float) -> None:
        """Return once every delivery received so far has been committed or refused; raise
        the failure of a group since the last ``settle``, or ``DeliveriesUnsettled`` when
        ``timeout`` seconds pass first."""
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
            failure, self._failure = self._failure, None
        if failure is not None:
            raise failure
        if not settled:
            raise DeliveriesUnsettled(
                f"{target - self._settled} deliveries were still being committed after "
                f"{timeout:g} s"
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
                    self._drain = None
                    self._changed.notify_all()
                    return
            try:
                self._commit_group(group)
            except BaseException as exc:  # kept for the next settle; the drain goes on
                with self._changed:
                    if self._failure is None:
                        self._failure = exc
            finally:
                with self._changed:
                    self._settled += len(group)
                    self._changed.notify_all()
