"""A `delegate` host on the real file system whose "worker" is a plain ``sleep`` process in
its own session (as Pi workers are), for the host-crash tests: run as a program, it admits
one job, starts it, records the worker's identity, prints ``READY <worker pid>`` and waits to
be killed. ``host(root)`` builds a host over the same store in the test's own process."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import attrs

from adapters.delegation.runtime import ThreadWakeup
from adapters.delegation.store import FileDelegationStore
from adapters.fs.platform import native_file_system
from adapters.store.lock import FastenersLockFactory
from adapters.system.clock import RandomIds, SystemClock
from adapters.system.processes import ProcProcesses
from application.delegation.host import DelegationHost
from application.delegation.transactions import SessionPorts
from application.ports import WorkerLease, WorkerStart
from domain.delegation.policy import Grant

SESSION = "crash"
REQUEST: dict[str, Any] = {
    "version": 1,
    "op": "run",
    "objective": "survive a host crash",
    "requirements": [{"id": "R1", "text": "answer"}],
    "jobs": [
        {
            "key": "k1",
            "mode": "consult",
            "question": "anything?",
            "requirements": ["R1"],
            "sourceIds": [],
            "acceptance": "an answer",
            "reason": "a second opinion",
        }
    ],
    "limits": {"maxRequests": 4, "deadlineMs": 600_000},
}


@attrs.define
class Grants:
    def grant(self) -> Grant:
        return Grant()


@attrs.define
class SleepWorkers:
    """Starts ``sleep 600`` per attempt in a new session; cancel is never confirmed."""

    started: list[tuple[WorkerLease, subprocess.Popen[bytes]]] = attrs.field(factory=list)

    def start(self, start: WorkerStart) -> None:
        process = subprocess.Popen(["sleep", "600"], start_new_session=True)
        self.started.append((start.lease, process))

    def cancel(self, lease: WorkerLease) -> bool:
        return False


def host(root: str, runtime: Any, *, dispatching: bool) -> DelegationHost:
    fs = native_file_system()
    store = FileDelegationStore(fs, FastenersLockFactory(), root)
    ports = SessionPorts(
        store, runtime, Grants(), fs, SystemClock(), ThreadWakeup(), processes=ProcProcesses()
    )
    return DelegationHost(
        session=SESSION, ports=ports, ids=RandomIds(), cwd=root, dispatching=dispatching
    )


def main(root: str) -> None:
    workers = SleepWorkers()
    delegation = host(root, workers, dispatching=True)
    delegation.handle(REQUEST)
    lease, process = workers.started[0]
    assert delegation.authorize_request(lease)
    delegation.record_worker(lease, process.pid)
    print(f"READY {process.pid}", flush=True)
    time.sleep(600)


if __name__ == "__main__":
    main(sys.argv[1])
