"""The documents the parent reads: a job's compact state, and an attempt's result with its
separate host receipt (seed §5). Worker claims sit under ``result``; everything the host
observed sits under ``receipt``: worker prose cannot reach it."""

from __future__ import annotations

import functools
from typing import Any

from domain.delegation.bindings import locate
from domain.delegation.ledger import settling
from domain.delegation.lifecycle import SETTLING, State
from domain.delegation.receipts import HOST_CHECK, PARENT_OBSERVATION
from domain.delegation.session import Attempt, Batch, Job, SessionState
from domain.delegation.usage_rows import usage_row, usage_totals
from domain.usage import Usage

# What the host enforces before work and what it only reports (docs/delegation.md, "What is
# enforced"). Fixed text: the same runtime gives every attempt the same guarantees.
ENFORCEMENT = {
    "requests": "enforced per model turn: the first before the prompt is sent, each later one "
    "before the tool calls that would cause it execute (refused: the calls are blocked and the "
    "worker killed; the one request Pi sends with the blocked results may start before the "
    "kill lands); Pi's retries are disabled in the worker's settings (retry.enabled false, "
    "retry.provider.maxRetries 0) and any retry Pi still reports is counted in "
    "observations.providerRetries; an SDK retry Pi does not report is not seen: no hard "
    "attempt limit is claimed",
    "toolCalls": "enforced before each complete call executes (lease, deadline, closed tool "
    "set, counter), serialised within one worker",
    "deadline": "enforced: the worker is killed (SIGTERM, then SIGKILL) at the job deadline",
    "outputBytes": "enforced per finalised assistant message on the host's side of the RPC "
    "stream: over the ceiling the worker is killed and nothing is parsed; Pi buffers the "
    "message inside the child first (transport and child buffering are not bounded)",
    "retries": "only a classified transient failure (a provider error naming load, a rate "
    "limit, a 5xx status or a broken transport; a worker that died before its first model "
    "response) is retried, at most twice per job, as a new attempt with a fresh worker that "
    "consumes a request from the job's reservation, only while the original deadline leaves "
    "time; a retry after a request reached the provider may bill that work twice "
    "(attempts[].possibleDuplicateBilling)",
    "usage": "reported by Pi per assistant message; categories not reported stay null",
    "cost": "reported by Pi from its model table (an estimate, not a bill)",
}


def _failure(attempt: Attempt) -> dict[str, Any] | None:
    if attempt.failure_kind is None:
        return None
    return {
        "kind": attempt.failure_kind,
        "classification": attempt.failure_class,
        "reason": attempt.failure_reason,
        "errorMessage": attempt.error_message,
        "retry": attempt.retry,
    }


def _attempt_row(attempt: Attempt) -> dict[str, Any]:
    return {
        "attemptId": attempt.attempt_id,
        "number": attempt.number,
        "hostStatus": str(attempt.state),
        "stopReason": attempt.stop_reason,
        "failure": _failure(attempt),
        "requests": attempt.consumed,
        "retryOf": attempt.retry_of,
        "possibleDuplicateBilling": attempt.possible_duplicate_billing,
        "usage": usage_totals(attempt.usage),
    }


def cited_kinds(attempt: Attempt) -> dict[str, int]:
    """How many evidence entries of the accepted result cite each kind of evidence."""
    kinds = {r.receipt_id: r.kind for r in attempt.envelope.receipts}
    counts = {"snapshot_source": 0, PARENT_OBSERVATION: 0, HOST_CHECK: 0}
    for item in (attempt.result or {}).get("evidence", []):
        kind = kinds.get(item["receiptId"]) if "receiptId" in item else "snapshot_source"
        if kind is not None:
            counts[kind] += 1
    return counts


def job_totals(job: Job, attempt: Attempt) -> dict[str, Any]:
    """The logical job's counters up to ``attempt`` (seed §7: a follow-up cannot reset them):
    every earlier attempt's requests and usage, follow-ups and host retries alike."""
    ids = [each.attempt_id for each in job.attempts]
    upto = job.attempts[: ids.index(attempt.attempt_id) + 1]
    usage = functools.reduce(Usage.plus, (each.usage for each in upto), Usage())
    return {
        "attempts": len(upto),
        "requests": sum(each.consumed for each in upto),
        "toolCalls": sum(each.tool_calls for each in upto),
        **usage_totals(usage),
    }


def receipt(batch: Batch, job: Job, attempt: Attempt) -> dict[str, Any]:
    # A host retry's receipt covers the failed attempts it retried: their usage and requests
    # count (each was admitted and may be billed), listed under ``attempts``.
    chain = [*job.retry_chain(attempt), attempt]
    usage = functools.reduce(Usage.plus, (each.usage for each in chain), Usage())
    consumed = sum(each.consumed for each in chain)
    started, settled = attempt.started_at_ms, attempt.settled_at_ms
    return {
        "hostStatus": str(attempt.state),
        "settlement": str(attempt.settlement),
        "identity": {
            "batchId": batch.batch_id,
            "jobId": job.job_id,
            "attemptId": attempt.attempt_id,
            "packetDigest": attempt.packet_digest,
            "taskGeneration": attempt.envelope.task_generation,
            "policyGeneration": attempt.envelope.policy_generation,
            "resultRevision": job.result_revision,
        },
        "observations": {
            "sourceReceipts": [s.document() for s in attempt.envelope.sources],
            "evidenceReceipts": [r.document() for r in attempt.envelope.receipts],
            "citedEvidenceKinds": cited_kinds(attempt),
            "hostCheckReceipt": attempt.check_receipt,
            "toolOutcomes": list(attempt.tool_outcomes),
            "stopReason": attempt.stop_reason,
            "lateResultsDropped": attempt.late_results,
            "providerRetries": attempt.provider_retries,
            "startRetries": attempt.start_retries,
            "failure": _failure(attempt),
            "hostRetries": len(chain) - 1,
            "workerProcess": None if attempt.worker is None else attempt.worker.pid,
        },
        "attempts": [_attempt_row(each) for each in chain],
        "usage": {
            "requests": consumed,
            **usage_totals(usage),
            "perRequest": [usage_row(u) for each in chain for u in each.request_usage],
        },
        "jobTotals": job_totals(job, attempt),
        "responseLimits": {
            "rawBytesReceived": attempt.raw_bytes,
            "parsedBytesRetained": attempt.retained_bytes,
            "overflow": attempt.overflow,
            # Part 1 sees only what the worker runtime hands over; no transport bound is proven.
            "bufferingBoundVerified": False,
        },
        "timing": {
            "queuedAt": attempt.queued_at_ms,
            "startedAt": started,
            "settledAt": settled,
            "elapsedMs": None if started is None or settled is None else settled - started,
        },
        "limits": {
            "admitted": attempt.envelope.limits.document(),
            "consumed": consumed,
            "reserved": attempt.reserved,
            "stillSettling": attempt.settlement in SETTLING,
            "enforcement": ENFORCEMENT,
        },
        "validation": {**attempt.validation, "generation": "bound"},
        "problem": attempt.problem,
        "reason": attempt.reason,
        "correctable": attempt.correctable,
        "contextGap": attempt.context_gap,
        "disposition": attempt.disposition,
        "notProof": "a receipt records protocol checks; it never proves the answer correct",
    }


def payload(batch: Batch, job: Job, attempt: Attempt) -> dict[str, Any]:
    return {"receipt": receipt(batch, job, attempt), "result": attempt.result}


def job_row(job: Job) -> dict[str, Any]:
    attempt = job.current
    covered = (
        sum(c["state"] != "uncovered" for c in attempt.result["coverage"])
        if attempt.result is not None
        else None
    )
    return {
        "jobId": job.job_id,
        "key": job.key,
        "mode": job.mode,
        "attemptId": attempt.attempt_id,
        "attempts": len(job.attempts),
        "state": str(attempt.state),
        "settlement": str(attempt.settlement),
        "resultRevision": job.result_revision,
        "coverage": {"covered": covered, "required": len(job.requirement_ids)},
        "requestsConsumed": job.consumed(),
        "deadlineAtMs": job.limits.deadline_at_ms,
        "reason": settled_reason(attempt),
    }


def settled_reason(attempt: Attempt) -> str | None:
    """Why a job ended without a usable result (failed, invalid, incomplete, cancelled,
    expired, stale, discarded), in one line; ``None`` while it works or its result stands."""
    if attempt.state in (State.QUEUED, State.RUNNING, State.READY, State.ACCEPTED):
        return None
    if attempt.failure_kind is not None:
        details = [d for d in (attempt.failure_reason, attempt.error_message) if d]
        detail = "; ".join(details) or "no detail reported"
        return f"{attempt.failure_kind} ({attempt.failure_class}): {detail}"
    if attempt.state is State.DISCARDED and attempt.disposition is not None:
        return f"discarded by the parent: {attempt.disposition.get('reason') or 'no reason given'}"
    return attempt.problem or attempt.reason or attempt.stop_reason


def batch_status(batch: Batch) -> dict[str, Any]:
    return {
        "batchId": batch.batch_id,
        "cancelled": batch.cancelled,
        "policyGeneration": batch.policy_generation,
        "taskGeneration": batch.task_generation,
        "collectionCursor": batch.cursor(),
        "acknowledgedCursor": batch.acknowledged,
        "jobs": [job_row(job) for job in batch.jobs],
    }


def still_settling(batch: Batch | None) -> list[dict[str, Any]]:
    """The batch's attempts whose worker may still hold provider resources."""
    return [
        {"jobId": job.job_id, "attemptId": a.attempt_id, "settlement": str(a.settlement)}
        for job in (batch.jobs if batch is not None else ())
        for a in job.attempts
        if a.settlement in SETTLING
    ]


def status(state: SessionState, batch_id: str | None) -> dict[str, Any]:
    """``status``'s answer: one batch's, or the session's with every batch."""
    if batch_id is not None:
        batch, _ = locate(state, batch_id, None)
        return {"op": "status", **batch_status(batch)}
    return {
        "op": "status",
        **session_status(state),
        "settling": settling(state),
        "batches": [batch_status(batch) for batch in state.batches.values()],
    }


def session_status(state: SessionState) -> dict[str, Any]:
    ledger = state.ledger
    return {
        "session": state.session,
        "policyGeneration": state.policy_generation,
        "taskGeneration": state.task_generation,
        "ledger": {
            "allowance": ledger.allowance,
            "reserved": ledger.reserved,
            "consumed": ledger.consumed,
            "free": ledger.free(),
            "renewals": [
                {"policyGeneration": r.policy_generation, "consumedBefore": r.consumed_before}
                for r in state.renewals
            ],
        },
        # Usage categories Pi reports per call; cost is unknown until a worker reports it.
        "accounting": {"requests": "host-counted", "tokens": "worker-reported", "cost": "null"},
        "sources": len(state.sources),
    }
