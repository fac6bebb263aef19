"""Fakes for the `delegate` host: a session store in memory that records what it committed, a
worker runtime that records and lets a test script what each worker returns, a fixed human
grant, a wakeup that moves the fake clock, and a world that builds a host over the real file
store on an in-memory file system (restartable)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import attrs

from adapters.delegation.store import FileDelegationStore
from application.delegation.host import DelegationHost
from application.delegation.transactions import SessionPorts
from application.ports import DelegationStore, GrantSource, Processes, Wakeup, WorkerRuntime
from domain.delegation.policy import Grant
from domain.delegation.session import ProcessRecord, SessionState, check_session_name
from domain.delegation.worker_protocol import WorkerLease, WorkerOutcome, WorkerStart
from tests.fakes.clock import FakeClock
from tests.fakes.machine import FakeMachine

ROOT = "/squad-root"
PROJECT = "/project"


@attrs.frozen
class DelegationCommit:
    """What one transaction wrote: the whole state of one session."""

    session: str
    state: SessionState


@attrs.define
class _Transaction:
    state: SessionState | None
    pending: SessionState | None = None

    def save(self, state: SessionState) -> None:
        self.pending = state


@attrs.define
class InMemoryDelegationStore:
    """``DelegationStore`` in memory, with the file store's semantics
    (tests/contract/test_delegation_store_contract.py runs the same behaviour against both): a
    transaction holds the store's lock, sees the state last committed, commits only what it
    saved and only when its body did not raise, and a state equal to the one loaded commits
    nothing; a snapshot is kept once under its SHA-256 and re-hashed on every read. Every
    commit is recorded in ``commits``."""

    states: dict[str, SessionState] = attrs.field(factory=dict)
    sources: dict[tuple[str, str], bytes] = attrs.field(factory=dict)
    commits: list[DelegationCommit] = attrs.field(factory=list)
    _lock: threading.RLock = attrs.field(factory=threading.RLock)

    @contextmanager
    def transaction(self, session: str) -> Iterator[_Transaction]:
        check_session_name(session)
        with self._lock:
            transaction = _Transaction(self.states.get(session))
            yield transaction
            saved = transaction.pending
            if saved is not None and saved != transaction.state:
                self.states[session] = saved
                self.commits.append(DelegationCommit(session, saved))

    def snapshot(self, session: str) -> SessionState | None:
        return self.states.get(check_session_name(session))

    def put_source(self, session: str, sha256: str, data: bytes) -> None:
        key = (check_session_name(session), sha256)
        if key in self.sources:
            self.read_source(session, sha256)  # an existing snapshot must still be these bytes
            return
        self.sources[key] = data

    def read_source(self, session: str, sha256: str) -> bytes:
        data = self.sources.get((check_session_name(session), sha256))
        if data is None:
            raise ValueError(f"snapshot {sha256}: not stored")
        if hashlib.sha256(data).hexdigest() != sha256:
            raise ValueError(f"snapshot {sha256} no longer has its captured bytes")
        return data

    def tamper_source(self, session: str, sha256: str, data: bytes) -> None:
        """Replace a snapshot's bytes behind the store's back (what a file store's disk may
        suffer)."""
        self.sources[(session, sha256)] = data


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
class DelegationWorld(FakeMachine):
    """One machine: file system, locks, clock and ids survive a host restart. The session
    store is the file store on the in-memory file system, or ``memory`` when one is given."""

    grant: Grant
    runtime: FakeWorkerRuntime = attrs.field(factory=FakeWorkerRuntime)
    grants: FixedGrants = attrs.field(default=None)
    wakeup: FakeWakeup = attrs.field(default=None)
    memory: InMemoryDelegationStore | None = None

    def __attrs_post_init__(self) -> None:
        self.grants = FixedGrants(self.grant)
        self.wakeup = FakeWakeup(self.clock)
        self.fs.add_dir(ROOT)
        self.fs.add_dir(PROJECT)

    @property
    def store(self) -> DelegationStore:
        if self.memory is not None:
            return self.memory
        return FileDelegationStore(self.fs, self.locks, ROOT)

    def ports(self, processes: FakeProcesses | None = None) -> SessionPorts:
        """The session's ports over this machine (``processes``: a host that recovers)."""
        return SessionPorts(
            self.store, self.runtime, self.grants, self.fs, self.clock, self.wakeup, processes
        )

    def host(
        self,
        *,
        session: str = "s1",
        worker_context: bool = False,
        processes: FakeProcesses | None = None,
    ) -> DelegationHost:
        """A fresh host object (a restart): nothing but the store carries over."""
        ports = self.ports(processes)
        return DelegationHost(
            session=session, ports=ports, ids=self.ids, cwd=PROJECT, worker_context=worker_context
        )


_store_conforms: type[DelegationStore] = InMemoryDelegationStore
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


@attrs.define
class RecordingWorkerHost:
    """The host side a worker runtime talks to: admits (or refuses) requests and records the
    workers it was told of and the outcomes reported; ``reported`` is set at each report."""

    admit: bool = True
    reports: list[WorkerOutcome] = attrs.field(factory=list)
    pids: list[int] = attrs.field(factory=list)
    reported: threading.Event = attrs.field(factory=threading.Event)

    def authorize_request(self, lease: WorkerLease) -> bool:
        return self.admit

    def record_worker(self, lease: WorkerLease, pid: int) -> None:
        self.pids.append(pid)

    def report(self, lease: WorkerLease, outcome: WorkerOutcome) -> dict[str, Any]:
        self.reports.append(outcome)
        self.reported.set()
        return {}
