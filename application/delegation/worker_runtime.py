"""``ChildWorkerRuntime``: the `delegate` host's ``WorkerRuntime`` over child Pi processes,
one ``WorkerAttempt`` per started attempt, each on its own thread.

It knows which attempts this process started, which still run, and stops them: a cancelled
lease's worker, every worker at shutdown, and (``sweep_revoked``) the workers whose lease
another process revoked.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

from application.delegation.worker_session import (
    WorkerAttempt,
    WorkerHost,
    WorkerPorts,
    WorkerSetup,
)
from application.ports import ChildRuntime, Clock, TempDirs, WorkerLease, WorkerStart

__all__ = ["ChildWorkerRuntime", "WorkerHost", "WorkerSetup", "sweep_revoked"]


class ChildWorkerRuntime:
    """``bind`` the host before the first start."""

    def __init__(
        self, children: ChildRuntime, *, clock: Clock, temp_dirs: TempDirs, setup: WorkerSetup
    ) -> None:
        self._ports = WorkerPorts(children, clock, temp_dirs, setup)
        self._host: WorkerHost | None = None
        self._lock = threading.Lock()
        self._workers: dict[str, WorkerAttempt] = {}
        self._idle = threading.Condition(self._lock)
        self.started: list[str] = []  # attempt IDs, in start order

    def bind(self, host: WorkerHost) -> None:
        self._host = host

    @property
    def host(self) -> WorkerHost:
        assert self._host is not None, "the worker runtime's bind was not called"
        return self._host

    def start(self, start: WorkerStart) -> None:
        worker = WorkerAttempt(start, self._ports, host=self.host, ended=self.forget)
        with self._lock:
            self._workers[start.lease.attempt_id] = worker
            self.started.append(start.lease.attempt_id)
        threading.Thread(
            target=worker.run, name=f"delegate-worker-{start.lease.attempt_id[:10]}", daemon=True
        ).start()

    def cancel(self, lease: WorkerLease) -> bool:
        """``True`` once this process's worker of ``lease`` is stopped (or already ended). A
        lease this process never started runs elsewhere, if anywhere: nothing here confirms it
        stopped, so its slot stays settling."""
        with self._lock:
            worker = self._workers.get(lease.attempt_id)
            ours = lease.attempt_id in self.started
        if worker is None:
            return ours
        return worker.stop()

    def forget(self, attempt_id: str) -> None:
        with self._idle:
            self._workers.pop(attempt_id, None)
            self._idle.notify_all()

    def running(self) -> dict[str, WorkerLease]:
        with self._lock:
            return {attempt_id: w.lease for attempt_id, w in self._workers.items()}

    def wait_idle(self, seconds: float) -> bool:
        with self._idle:
            return self._idle.wait_for(lambda: not self._workers, timeout=seconds)

    def stop_all(self) -> None:
        """Shutdown: every worker killed (their leases stay the host's to settle)."""
        for lease in list(self.running().values()):
            with contextlib.suppress(Exception):
                self.cancel(lease)


def sweep_revoked(
    runtime: ChildWorkerRuntime, live: Callable[[WorkerLease], bool]
) -> list[WorkerLease]:
    """Kill the workers whose lease another process revoked (a ``cancel`` from the CLI):
    this process learns it only from the store."""
    stopped = []
    for lease in runtime.running().values():
        if not live(lease):
            runtime.cancel(lease)
            stopped.append(lease)
    return stopped
