"""The ports of the `delegate` host (docs/delegation.md): where a session's state lives, how
its workers run, what the human granted, and how ``collect`` waits.

Part 1 runs workers through :class:`WorkerRuntime` fakes only; part 2 adds the adapter over
real ``pi --mode rpc`` children. Every callback a worker makes into the host carries its
:class:`WorkerLease`; a revoked lease (cancel, deadline, navigation, policy change) is refused,
so a cancelled or expired attempt can never publish a late result.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

import attrs

from domain.delegation.envelope import Envelope
from domain.delegation.policy import Grant
from domain.delegation.session import ProcessRecord, SessionState, Usage

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


@attrs.frozen
class WorkerLease:
    """A job-lifetime lease: immutable admitted route data; valid while the host's record of
    the attempt still holds the same ``token``."""

    session: str
    batch_id: str
    job_id: str
    attempt_id: str
    token: str
    packet_digest: str


@attrs.frozen
class WorkerStart:
    lease: WorkerLease
    envelope: Envelope
    packet: bytes
    # A host retry waits this long before it starts (the backoff; inside the deadline).
    delay_ms: int = 0


@attrs.frozen
class WorkerOutcome:
    """What a worker returned: raw bytes as received (never trimmed), whether the runtime
    stopped reading at the byte bound, the terminal stop reason and the usage it reported."""

    raw: bytes = b""
    overflow: bool = False
    stop_reason: str = "stop"
    usage: Usage = attrs.field(factory=Usage)
    # Each model request's own usage, in order (the receipt's ``usage.perRequest``); ``usage``
    # is their sum when given.
    per_request: tuple[Usage, ...] = ()
    # Bytes received before the runtime stopped reading (overflow), when more than ``raw``.
    received_bytes: int | None = None
    problem: str | None = None
    # Pi's own retries or compactions seen on the stream (``auto_retry_start``,
    # ``compaction_start``): the worker's settings disable them, so any is reported.
    provider_retries: int = 0
    # Starts retried after a classified transient failure (before any model request).
    start_retries: int = 0
    # A failure's kind as the runtime saw it (``domain.delegation.retry.FailureKind``; None:
    # derived from ``stop_reason``), Pi's ``errorMessage`` for a provider error, and how many
    # model responses arrived before it (None: every reported request was one).
    failure: str | None = None
    error_message: str | None = None
    responses: int | None = None


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
    def state(self) -> SessionState | None: ...

    def save(self, state: SessionState) -> None:
        """Write the whole state atomically when the transaction ends without an error."""
        ...


class DelegationStore(Protocol):
    def transaction(self, session: str) -> AbstractContextManager[DelegationTransaction]:
        """The session's cross-process lock, its state loaded; saved once at the end."""
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
