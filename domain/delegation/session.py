"""A delegation session's durable state: the aggregate one locked transaction reads, decides on
and writes back whole (``adapters/delegation/store.py``).

Every value here is frozen; a decision (``domain/delegation/decision.py``) returns a new state
built with ``attrs.evolve`` and the ``with_*`` building blocks below, never a changed one. Times
are integer milliseconds since the epoch, read from the Clock port once per operation.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, TypeVar

import attrs

from domain.delegation.envelope import EffectiveLimits, Envelope, SourceDescriptor
from domain.delegation.errors import DelegationError
from domain.delegation.lifecycle import Settlement, State
from domain.delegation.receipts import EvidenceReceipt
from domain.errors import ErrorCode
from domain.usage import Usage

_Value = TypeVar("_Value")


def _frozen(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    """A record's mapping as a read-only view of its own copy."""
    return MappingProxyType(dict(mapping))


def _with(mapping: Mapping[str, _Value], key: str, value: _Value) -> dict[str, _Value]:
    return {**mapping, key: value}


@attrs.frozen
class Ledger:
    """Model requests: granted ``allowance``, ``reserved`` (held, not yet used), ``consumed``."""

    allowance: int
    reserved: int = 0
    consumed: int = 0

    def free(self) -> int:
        return self.allowance - self.reserved - self.consumed

    def reserve(self, requests: int) -> Ledger:
        return attrs.evolve(self, reserved=self.reserved + requests)

    def release(self, requests: int) -> Ledger:
        return attrs.evolve(self, reserved=self.reserved - requests)

    def consume_reserved(self) -> Ledger:
        """One held request used (debited before it is sent)."""
        return attrs.evolve(self, reserved=self.reserved - 1, consumed=self.consumed + 1)


@attrs.frozen
class Renewal:
    """A policy change that renewed the allowance; what was consumed before stays recorded."""

    policy_generation: int
    allowance: int
    consumed_before: int
    at_ms: int


@attrs.frozen
class SourceRecord:
    descriptor: SourceDescriptor
    # The stable-read origin (absolute path), for revalidation; None for a parent excerpt.
    origin: str | None
    root: str | None
    captured_at_ms: int


@attrs.frozen
class ProcessRecord:
    """A process the host can recognise again: its pid and an opaque identity (boot, pid
    namespace and start time, from the ``Processes`` port) that a reused pid does not share."""

    pid: int
    identity: str


@attrs.frozen
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
    # Model requests the host refused (past the reservation): the worker was stopped for it.
    requests_refused: int = 0
    tool_calls: int = 0
    lease: str | None = None
    started_at_ms: int | None = None
    settled_at_ms: int | None = None
    # The judged result and the parent's disposition: JSON documents, replaced whole.
    result: dict[str, Any] | None = None
    validation: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen)
    problem: str | None = None
    correctable: bool = False
    context_gap: bool = False
    stop_reason: str | None = None
    raw_bytes: int = 0
    retained_bytes: int = 0
    overflow: bool = False
    usage: Usage = attrs.field(factory=Usage)
    request_usage: tuple[Usage, ...] = ()
    provider_retries: int = 0
    start_retries: int = 0
    tool_outcomes: tuple[dict[str, Any], ...] = ()
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


@attrs.frozen
class Job:
    job_id: str
    key: str
    mode: str
    dedup_key: str
    requirement_ids: tuple[str, ...]
    source_ids: tuple[str, ...]
    limits: EffectiveLimits
    attempts: tuple[Attempt, ...]
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

    def with_attempt(self, attempt: Attempt) -> Job:
        """The attempt in place of the one with its ID, or appended as the new current one."""
        ids = [a.attempt_id for a in self.attempts]
        if attempt.attempt_id not in ids:
            return attrs.evolve(self, attempts=(*self.attempts, attempt))
        at = ids.index(attempt.attempt_id)
        return attrs.evolve(self, attempts=(*self.attempts[:at], attempt, *self.attempts[at + 1 :]))


@attrs.frozen
class Event:
    """One entry of a batch's collection log; ``position`` is the ``collectionCursor``."""

    position: int
    job_id: str
    attempt_id: str
    result_revision: int
    state: State
    at_ms: int


@attrs.frozen
class Batch:
    batch_id: str
    objective: str
    admitted_at_ms: int
    policy_generation: int
    task_generation: int
    jobs: tuple[Job, ...]
    events: tuple[Event, ...] = ()
    acknowledged: int = 0
    cancelled: bool = False

    def job(self, job_id: str) -> Job | None:
        return next((job for job in self.jobs if job.job_id == job_id), None)

    def cursor(self) -> int:
        return self.events[-1].position if self.events else 0

    def with_job(self, job: Job) -> Batch:
        return attrs.evolve(
            self, jobs=tuple(job if j.job_id == job.job_id else j for j in self.jobs)
        )

    def with_event(self, job: Job, attempt: Attempt, now_ms: int) -> Batch:
        """A visible change of the job's result (``attempt`` as it is now): a new result
        revision and a collection event."""
        job = attrs.evolve(job.with_attempt(attempt), result_revision=job.result_revision + 1)
        event = Event(
            self.cursor() + 1,
            job.job_id,
            attempt.attempt_id,
            job.result_revision,
            attempt.state,
            now_ms,
        )
        return attrs.evolve(self.with_job(job), events=(*self.events, event))


@attrs.frozen
class IdempotencyRecord:
    op: str
    payload_digest: str
    outcome: dict[str, Any]


Found = tuple[Batch, Job, Attempt]


@attrs.frozen
class SessionState:
    session: str
    policy_digest: str
    policy_generation: int
    ledger: Ledger
    task_generation: int = 0
    renewals: tuple[Renewal, ...] = ()
    sources: Mapping[str, SourceRecord] = attrs.field(factory=dict, converter=_frozen)
    # Host-issued evidence receipts (parent observations, host checks), by receipt ID.
    receipts: Mapping[str, EvidenceReceipt] = attrs.field(factory=dict, converter=_frozen)
    batches: Mapping[str, Batch] = attrs.field(factory=dict, converter=_frozen)
    idempotency: Mapping[str, IdempotencyRecord] = attrs.field(factory=dict, converter=_frozen)
    version: int = 1

    def attempts(self) -> list[Found]:
        return [(b, j, a) for b in self.batches.values() for j in b.jobs for a in j.attempts]

    def current_attempts(self) -> list[Found]:
        """Each job's current attempt (earlier ones are history)."""
        return [(b, j, j.current) for b in self.batches.values() for j in b.jobs]

    def find_attempt(self, attempt_id: str) -> Found | None:
        return next((t for t in self.attempts() if t[2].attempt_id == attempt_id), None)

    def found(self, attempt_id: str) -> Found:
        """An attempt this state holds (its ID came from this state)."""
        found = self.find_attempt(attempt_id)
        assert found is not None
        return found

    def with_batch(self, batch: Batch) -> SessionState:
        return attrs.evolve(self, batches=_with(self.batches, batch.batch_id, batch))

    def with_job(self, batch_id: str, job: Job) -> SessionState:
        return self.with_batch(self.batches[batch_id].with_job(job))

    def with_attempt(self, attempt: Attempt) -> SessionState:
        """The attempt in place of the one with its ID (no visible change of the result)."""
        batch, job, _ = self.found(attempt.attempt_id)
        return self.with_job(batch.batch_id, job.with_attempt(attempt))

    def with_event(self, attempt: Attempt, now_ms: int) -> SessionState:
        """The attempt in place of the one with its ID, as a visible change of its job's
        result: a new result revision and a collection event."""
        batch, job, _ = self.found(attempt.attempt_id)
        return self.with_batch(batch.with_event(job, attempt, now_ms))

    def with_ledger(self, ledger: Ledger) -> SessionState:
        return attrs.evolve(self, ledger=ledger)

    def with_source(self, record: SourceRecord) -> SessionState:
        return attrs.evolve(self, sources=_with(self.sources, record.descriptor.source_id, record))

    def with_receipt(self, receipt: EvidenceReceipt) -> SessionState:
        return attrs.evolve(self, receipts=_with(self.receipts, receipt.receipt_id, receipt))

    def with_idempotency(self, key: str, record: IdempotencyRecord) -> SessionState:
        return attrs.evolve(self, idempotency=_with(self.idempotency, key, record))


_SESSION_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")


def session_name_problem(name: str) -> str | None:
    """A session name becomes a directory name: short, plain, never hidden or a dot path."""
    if not 1 <= len(name) <= 64 or name.startswith(".") or not set(name) <= _SESSION_NAME_CHARS:
        return "a session name is 1-64 characters of A-Z a-z 0-9 _ - . and does not start with ."
    return None


def check_session_name(name: str) -> str:
    """The name, or ``DELEGATE_INVALID`` naming the rule (the ``--session`` flag gives it)."""
    problem = session_name_problem(name)
    if problem is not None:
        raise DelegationError(ErrorCode.DELEGATE_INVALID, f"--session: {problem}")
    return name
