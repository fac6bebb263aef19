"""Deliveries a spec child has observed, committed in groups when they must count (contract §8).

``message_end`` matches a finalised tool result to its pending read and hands it here; it does
not commit. ``settle`` commits every delivery received so far as one group (one fresh canonical
read made after all of them arrived, one durable write) before it returns. The child settles at
Pi's ``context`` event (before every model call, so the model's next turn, and any tool it asks
for there, comes after the commits), in the bootstrap and at ``session_shutdown``; the guard
counts only what is committed. Nothing is committed while Pi is still delivering a message's
results, so a group's whole-file hash never competes with the reads still running, and nothing
at end of input: Pi saves a result to its session after its ``message_end`` handlers, so a Pi
that died before its next ``context`` may not hold it. A delivery never settled, or whose group
failed, counts as not read: the guard stays closed and the chunk is read again, as after a
crash before commit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

_Delivery = TypeVar("_Delivery")


class DeliveriesUnsettled(Exception):
    """``settle`` could not start within its time: another settle's group still commits."""


class DeliveryQueue(Generic[_Delivery]):
    """Deliveries in arrival order; ``commit_group`` receives each settled group, in order.

    One group commits at a time; a settle that waits for another takes whatever is left when it
    may start. A group's failure (what ``commit_group`` raised) is kept until a ``settle`` that
    reports it takes it, once, with a note of any later group that failed meanwhile; later
    groups are still committed.
    """

    def __init__(self, commit_group: Callable[[Sequence[_Delivery]], None]) -> None:
        self._commit_group = commit_group
        self._state = threading.Lock()  # the waiting list and the failure
        self._committing = threading.Lock()  # one group at a time, in order
        self._waiting: list[_Delivery] = []
        self._failures: list[Exception] = []

    def put(self, delivery: _Delivery) -> None:
        with self._state:
            self._waiting.append(delivery)

    def settle(self, timeout: float, *, report: bool = True) -> None:
        """Commit every delivery received so far (waiting at most ``timeout`` seconds for a
        group another settle is committing). With ``report``, raise the failure of a group
        not reported yet."""
        if not self._committing.acquire(timeout=timeout):
            raise DeliveriesUnsettled(
                f"{self.unsettled} deliveries were not committed: another commit still held "
                f"them after {timeout:g} s"
            )
        try:
            with self._state:
                group, self._waiting = self._waiting, []
            if group:
                try:
                    self._commit_group(group)
                except Exception as exc:  # kept for a settle that reports it
                    with self._state:
                        self._failures.append(exc)
        finally:
            self._committing.release()
        if report:
            with self._state:
                failures, self._failures = self._failures, []
            if failures:
                first, *later = failures
                if later:
                    first.add_note(
                        f"{len(later)} later group(s) failed too: "
                        + "; ".join(f"{type(exc).__name__}: {exc}" for exc in later)
                    )
                raise first

    @property
    def unsettled(self) -> int:
        with self._state:
            return len(self._waiting)
