"""The process-local parts of the `delegate` host: how ``collect`` waits, and the worker
runtime of a process that runs no workers (part 1's command line: workers arrive in part 2)."""

from __future__ import annotations

import threading

from application.ports import WorkerLease, WorkerStart


class ThreadWakeup:
    """A condition other threads of this process notify when a result is published; another
    process's writes are seen because the waiter re-reads the store after each wait."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._generation = 0

    def wait(self, seconds: float) -> None:
        with self._condition:
            seen = self._generation
            self._condition.wait_for(lambda: self._generation != seen, timeout=seconds)

    def notify(self) -> None:
        with self._condition:
            self._generation += 1
            self._condition.notify_all()


class NoWorkers:
    """No worker runs in this process: the host is built with ``dispatching=False``, so queued
    jobs wait for a process that has workers. Neither method is reached."""

    def start(self, start: WorkerStart) -> None:
        raise RuntimeError("this process runs no delegation workers")

    def cancel(self, lease: WorkerLease) -> bool:
        return False
