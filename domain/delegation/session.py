"""A delegation session's durable state: the aggregate one locked transaction reads, changes
and writes back whole (``adapters/delegation/store.py``).

The values (envelopes, descriptors) are frozen; the aggregate's records are mutable only so
that a transaction can change them in place before the one atomic write. Times are integer
milliseconds since the epoch, read from the Clock port once per operation.
"""

from __future__ import annotations

from typing import Any

import attrs

from domain.delegation.envelope import EffectiveLimits, Envelope, SourceDescriptor
from domain.delegation.lifecycle import Settlement, State
from domain.delegation.receipts import EvidenceReceipt


@attrs.define
class Ledger:
    """Model requests: granted ``allowance``, ``reserved`` (held, not yet used), ``consumed``."""

    allowance: int
    reserved: int = 0
    consumed: int = 0

    def free(self) -> int:
        return self.allowance - self.reserved - self.consumed


@attrs.define
class Renewal:
    """A policy change that renewed the allowance; what was consumed before stays recorded."""

    policy_generation: int
    allowance: int
    consumed_before: int
    at_ms: int


@attrs.define
class SourceRecord:
    descriptor: SourceDescriptor
    # The stable-read origin (absolute path), for revalidation; None for a parent excerpt.
    origin: str | None
    root: str | None
    captured_at_ms: int


@attrs.define
class Usage:
    """Per-category usage as reported; ``None`` is "never reported", distinct from 0."""

    input: int | None = None
    output: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None
    cost: float | None = None
    cost_estimated: bool = False
    reported_calls: int = 0

    def add(self, other: Usage) -> None:
        for name in ("input", "output", "cache_read", "cache_write", "cost"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if theirs is not None:
                setattr(self, name, theirs if mine is None else mine + theirs)
        self.cost_estimated = self.cost_estimated or other.cost_estimated
        self.reported_calls += other.reported_calls


@attrs.define
class ProcessRecord:
    """A process the host can recognise again: its pid and an opaque identity (boot, pid
    namespace and start time, from the ``Processes`` port) that a reused pid does not share."""

    pid: int
    identity: str


@attrs.define
class Attempt:
    attempt_id: str
    number: int
    envelope: Envelope
    packet_digest: str
    state: State
    settlement: Settlement
    reserved: int
    queued_at_ms: int
    consumed: int = 0
    tool_calls: int = 0
    lease: str | None = None
    started_at_ms: int | None = None
    settled_at_ms: int | None = None
    result: dict[str, Any] | None = None
    validation: dict[str, str] = attrs.field(factory=dict)
    problem: str | None = None
    correctable: bool = False
    context_gap: bool = False
    stop_reason: str | None = None
    raw_bytes: int = 0
    retained_bytes: int = 0
    overflow: bool = False
    usage: Usage = attrs.field(factory=Usage)
    request_usage: list[Usage] = attrs.field(factory=list)
    provider_retries: int = 0
    start_retries: int = 0
    tool_outcomes: list[dict[str, Any]] = attrs.field(factory=list)
    late_results: int = 0
    reason: str | None = None
    disposition: dict[str, Any] | None = None
    # A failed attempt's classification (domain/delegation/retry.py) and what became of it.
    failure_kind: str | None = None
    failure_class: str | None = None
    failure_reason: str | None = None
    error_message: str | None = None
    retry: str | None = None
    possible_duplicate_billing: bool = False
    # A host retry: the failed attempt it retries, and when it may start (the backoff).
    retry_of: str | None = None
    not_before_ms: int | None = None
    # The process that runs the worker (its host) and the worker's own process, for recovery
    # after the host is gone; ``None``: not recorded (or the platform cannot identify one).
    host: ProcessRecord | None = None
    worker: ProcessRecord | None = None
    # The host check receipt issued when this attempt's output was validated.
    check_receipt: str | None = None


@attrs.define
class Job:
    job_id: str
    key: str
    mode: str
    dedup_key: str
    requirement_ids: tuple[str, ...]
    source_ids: tuple[str, ...]
    limits: EffectiveLimits
    attempts: list[Attempt]
    result_revision: int = 0
    follow_ups: int = 0

    @property
    def current(self) -> Attempt:
        return self.attempts[-1]

    def consumed(self) -> int:
        return sum(attempt.consumed for attempt in self.attempts)

    def retry_chain(self, attempt: Attempt) -> list[Attempt]:
        """The failed attempts ``attempt`` retries (host retries), oldest first."""
        by_id = {a.attempt_id: a for a in self.attempts}
        chain: list[Attempt] = []
        current = by_id.get(attempt.retry_of) if attempt.retry_of else None
        while current is not None and len(chain) < len(self.attempts):
            chain.insert(0, current)
            current = by_id.get(current.retry_of) if current.retry_of else None
        return chain


@attrs.define
class Event:
    """One entry of a batch's collection log; ``position`` is the ``collectionCursor``."""

    position: int
    job_id: str
    attempt_id: str
    result_revision: int
    state: State
    at_ms: int


@attrs.define
class Batch:
    batch_id: str
    objective: str
    admitted_at_ms: int
    policy_generation: int
    task_generation: int
    jobs: list[Job]
    events: list[Event] = attrs.field(factory=list)
    acknowledged: int = 0
    cancelled: bool = False

    def job(self, job_id: str) -> Job | None:
        return next((job for job in self.jobs if job.job_id == job_id), None)

    def cursor(self) -> int:
        return self.events[-1].position if self.events else 0


@attrs.define
class IdempotencyRecord:
    op: str
    payload_digest: str
    outcome: dict[str, Any]


@attrs.define
class SessionState:
    session: str
    policy_digest: str
    policy_generation: int
    ledger: Ledger
    task_generation: int = 0
    renewals: list[Renewal] = attrs.field(factory=list)
    sources: dict[str, SourceRecord] = attrs.field(factory=dict)
    # Host-issued evidence receipts (parent observations, host checks), by receipt ID.
    receipts: dict[str, EvidenceReceipt] = attrs.field(factory=dict)
    batches: dict[str, Batch] = attrs.field(factory=dict)
    idempotency: dict[str, IdempotencyRecord] = attrs.field(factory=dict)
    version: int = 1

    def attempts(self) -> list[tuple[Batch, Job, Attempt]]:
        return [(b, j, a) for b in self.batches.values() for j in b.jobs for a in j.attempts]

    def find_attempt(self, attempt_id: str) -> tuple[Batch, Job, Attempt] | None:
        return next((t for t in self.attempts() if t[2].attempt_id == attempt_id), None)


_SESSION_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")


def session_name_problem(name: str) -> str | None:
    """A session name becomes a directory name: short, plain, never hidden or a dot path."""
    if not 1 <= len(name) <= 64 or name.startswith(".") or not set(name) <= _SESSION_NAME_CHARS:
        return "a session name is 1-64 characters of A-Z a-z 0-9 _ - . and does not start with ."
    return None
