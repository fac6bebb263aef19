"""What the host and a worker runtime hand each other (the ``WorkerRuntime`` port,
``application/ports/delegation.py``): the lease every worker callback carries
(``domain.delegation.lease``), the start the host asks for, and the outcome a worker reports.
"""

from __future__ import annotations

import attrs

from domain.delegation.envelope import Envelope
from domain.delegation.lease import WorkerLease
from domain.usage import Usage

__all__ = ["WorkerLease", "WorkerOutcome", "WorkerStart"]


@attrs.frozen
class WorkerStart:
    lease: WorkerLease
    envelope: Envelope
    packet: bytes
    # A host retry waits this long before it starts (the backoff; inside the deadline).
    delay_ms: int = 0
    # The model requests held for this attempt when it starts (None: the job's maxRequests):
    # the runtime stops the worker before it would send one more.
    requests: int | None = None


@attrs.frozen
class WorkerOutcome:
    """What a worker returned: raw bytes as received (never trimmed), whether the runtime
    stopped reading at the byte bound, the terminal stop reason and the usage it reported."""

    raw: bytes = b""
    overflow: bool = False
    stop_reason: str = "stop"
    usage: Usage = attrs.field(factory=Usage)
    # Each model request's own usage, in order (the receipt's ``usage.perRequest``); ``usage``
    # is their sum when given. A message that reported no usage is ``Usage()`` (no turn).
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
    # Model requests the runtime saw reach the provider, a refused one included (None: only
    # those the host admitted): the receipt counts at least this many.
    requests: int | None = None
