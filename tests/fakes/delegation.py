"""Fakes for the `delegate` host: a worker runtime that records and lets a test script what
each worker returns, a fixed human grant, a wakeup that moves the fake clock, and a world that
builds a host over the real file store on an in-memory file system (restartable)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import attrs

from adapters.delegation.store import FileDelegationStore
from application.delegation.host import DelegationHost
from application.ports import (
    GrantSource,
    Processes,
    Wakeup,
    WorkerLease,
    WorkerOutcome,
    WorkerRuntime,
    WorkerStart,
)
from domain.delegation.policy import Grant
from domain.delegation.session import ProcessRecord
from tests.fakes.clock import FakeClock, SequentialIds
from tests.fakes.filesystem import InMemoryFileSystem
from tests.fakes.locks import FakeLockFactory

ROOT = "/squad-root"
PROJECT = "/project"


@attrs.define
class FakeWorkerRuntime:
    starts: list[WorkerStart] = attrs.field(factory=list)
    cancelled: list[WorkerLease] = attrs.field(factory=list)
    # Whether a stop request is confirmed (resources settled) or left uncertain.
    confirms_cancel: bool = True
    fail_start: bool = False
    on_cancel: Callable[[WorkerLease], None] | None = None
    _guard: threading.Lock = attrs.field(factory=threading.Lock)

    def start(self, start: WorkerStart) -> None:
        if self.fail_start:
            raise RuntimeError("scripted start failure")
        with self._guard:
            self.starts.append(start)

    def cancel(self, lease: WorkerLease) -> bool:
        with self._guard:
            self.cancelled.append(lease)
        if self.on_cancel is not None:
            self.on_cancel(lease)
        return self.confirms_cancel

    def lease(self, job_id: str) -> WorkerLease:
        """The lease of the most recent start of ``job_id``."""
        return next(s.lease for s in reversed(self.starts) if s.lease.job_id == job_id)

    def packet(self, job_id: str) -> dict[str, Any]:
        start = next(s for s in reversed(self.starts) if s.lease.job_id == job_id)
        document: dict[str, Any] = json.loads(start.packet)
        return document


@attrs.define
class FakeProcesses:
    """Processes by pid: ``running`` maps a pid to the identity of the process under it now;
    ``unknown`` pids cannot be told. ``pid`` is this process."""

    pid: int = 100
    running: dict[int, str] = attrs.field(factory=dict)
    unknown: set[int] = attrs.field(factory=set)
    terminated: list[int] = attrs.field(factory=list)
    stoppable: bool = True

    def __attrs_post_init__(self) -> None:
        self.running.setdefault(self.pid, f"start-{self.pid}")

    def me(self) -> ProcessRecord | None:
        return self.identify(self.pid)

    def identify(self, pid: int) -> ProcessRecord | None:
        identity = self.running.get(pid)
        return None if identity is None else ProcessRecord(pid, identity)

    def alive(self, record: ProcessRecord) -> bool | None:
        if record.pid in self.unknown:
            return None
        return self.running.get(record.pid) == record.identity

    def terminate(self, record: ProcessRecord) -> bool:
        if self.alive(record) is not True:
            return self.alive(record) is False
        self.terminated.append(record.pid)
        if self.stoppable:
            del self.running[record.pid]
        return self.stoppable


@attrs.define
class FixedGrants:
    current: Grant

    def grant(self) -> Grant:
        return self.current


@attrs.define
class FakeWakeup:
    """``wait`` advances the fake clock by the time asked and runs the scripted hooks (a worker
    reporting "while" collect waits); ``notify`` is counted."""

    clock: FakeClock
    hooks: list[Callable[[], object]] = attrs.field(factory=list)
    waited: list[float] = attrs.field(factory=list)
    notified: int = 0

    def wait(self, seconds: float) -> None:
        self.waited.append(seconds)
        self.clock.advance(seconds)
        if self.hooks:
            self.hooks.pop(0)()

    def notify(self) -> None:
        self.notified += 1


@attrs.define
class DelegationWorld:
    """One machine: file system, locks, clock and ids survive a host restart."""

    grant: Grant
    fs: InMemoryFileSystem = attrs.field(factory=InMemoryFileSystem)
    locks: FakeLockFactory = attrs.field(factory=FakeLockFactory)
    clock: FakeClock = attrs.field(factory=FakeClock)
    ids: SequentialIds = attrs.field(factory=SequentialIds)
    runtime: FakeWorkerRuntime = attrs.field(factory=FakeWorkerRuntime)
    grants: FixedGrants = attrs.field(default=None)
    wakeup: FakeWakeup = attrs.field(default=None)

    def __attrs_post_init__(self) -> None:
        self.grants = FixedGrants(self.grant)
        self.wakeup = FakeWakeup(self.clock)
        self.fs.add_dir(ROOT)
        self.fs.add_dir(PROJECT)

    @property
    def store(self) -> FileDelegationStore:
        return FileDelegationStore(self.fs, self.locks, ROOT)

    def host(
        self,
        *,
        session: str = "s1",
        worker_context: bool = False,
        processes: FakeProcesses | None = None,
    ) -> DelegationHost:
        """A fresh host object (a restart): nothing but the store carries over."""
        return DelegationHost(
            session=session,
            store=self.store,
            runtime=self.runtime,
            grants=self.grants,
            fs=self.fs,
            clock=self.clock,
            ids=self.ids,
            wakeup=self.wakeup,
            cwd=PROJECT,
            worker_context=worker_context,
            processes=processes,
        )


_runtime_conforms: type[WorkerRuntime] = FakeWorkerRuntime
_grants_conforms: type[GrantSource] = FixedGrants
_wakeup_conforms: type[Wakeup] = FakeWakeup
_processes_conforms: type[Processes] = FakeProcesses


def report(status: str = "complete", **overrides: Any) -> bytes:
    """A well-formed worker result for a job with requirement R1 and no sources."""
    document: dict[str, Any] = {
        "status": status,
        "answer": "the answer",
        "evidence": [],
        "coverage": [
            {"requirementId": "R1", "state": "covered", "explanation": "done", "evidenceIds": []}
        ],
        "findings": [],
        "missing": [],
    }
    document.update(overrides)
    return json.dumps(document).encode("utf-8")


def outcome(raw: bytes, **kwargs: Any) -> WorkerOutcome:
    return WorkerOutcome(raw=raw, **kwargs)
