"""The ports of the `delegate` host (docs/delegation.md): where a session's state lives, how
its workers run, what the human granted, and how ``collect`` waits.

Workers run on real ``pi --mode rpc`` children (``adapters/delegation/workers.py``) or on the
tests' fakes. The values passed across :class:`WorkerRuntime` (the lease every worker callback
carries, the start, the outcome) are domain values (``domain/delegation/worker_protocol.py``),
re-exported here.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

from domain.delegation.policy import Grant
from domain.delegation.session import ProcessRecord, SessionState
from domain.delegation.worker_protocol import WorkerLease, WorkerOutcome, WorkerStart

__all__ = [
    "DelegationStore",
    "DelegationTransaction",
    "GrantSource",
    "Processes",
    "Wakeup",
    "WorkerLease",
    "WorkerOutcome",
    "WorkerRuntime",
    "WorkerStart",
]


class WorkerRuntime(Protocol):
    def start(self, start: WorkerStart) -> None:
        """Begin the attempt (asynchronously); raising means it never started."""
        ...

    def cancel(self, lease: WorkerLease) -> bool:
        """Ask the worker to stop. ``True`` only when it has stopped and its provider
        resources are settled; ``False`` leaves the attempt's slot settling (``uncertain``)."""
        ...


class Processes(Protocol):
    """Recognising processes across host restarts (recovery of a lost host's workers)."""

    def me(self) -> ProcessRecord | None:
        """This process; ``None`` where the platform cannot identify processes."""
        ...

    def identify(self, pid: int) -> ProcessRecord | None:
        """A running process by pid (a worker this host just started); ``None`` if gone or
        unidentifiable."""
        ...

    def alive(self, record: ProcessRecord) -> bool | None:
        """``True``: that exact process runs; ``False``: provably gone (no such pid, another
        process under it, a zombie, or the machine rebooted); ``None``: cannot tell here."""
        ...

    def terminate(self, record: ProcessRecord) -> bool:
        """Stop that exact process and its process group (SIGTERM, SIGKILL after a grace),
        only while its identity still matches; ``True`` once it is gone."""
        ...


class DelegationTransaction(Protocol):
    @property
    def state(self) -> SessionState | None:
        """The session's state as last written; ``None`` for a session never written."""
        ...

    def save(self, state: SessionState) -> None:
        """Write the whole state atomically when the transaction ends without an error; a
        state equal to the one loaded writes nothing."""
        ...


class DelegationStore(Protocol):
    """Where a session's state and its captured snapshots live (the contract both the file
    store and the tests' fake keep: ``tests/contract/test_delegation_store_contract.py``). A
    session name that is not a plain directory name is refused (``DELEGATE_INVALID``)."""

    def transaction(self, session: str) -> AbstractContextManager[DelegationTransaction]:
        """The session's cross-process lock, its state loaded; saved once at the end, nothing
        saved when the body raises."""
        ...

    def snapshot(self, session: str) -> SessionState | None:
        """The state as last written, read without the lock (writes are atomic)."""
        ...

    def put_source(self, session: str, sha256: str, data: bytes) -> None:
        """Store captured bytes once, read-only, under their hash (immutable snapshot)."""
        ...

    def read_source(self, session: str, sha256: str) -> bytes:
        """A snapshot's bytes, re-hashed: a changed snapshot raises ``ValueError``."""
        ...


class GrantSource(Protocol):
    def grant(self) -> Grant:
        """The human grant now (policy files and flags); refusals are ``DelegationError``."""
        ...


class Wakeup(Protocol):
    def wait(self, seconds: float) -> None:
        """Block at most ``seconds`` or until ``notify``; the caller re-reads the store."""
        ...

    def notify(self) -> None: ...
