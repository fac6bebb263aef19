"""A `delegate` outcome in lines a person reads: the ``delegate`` tool's transcript entry and
the ``/delegate status`` and ``/delegate collect`` cards (docs/delegation.md, "In Pi").

Drawn from the same documents the model and ``pi-squad delegate`` get (the operation's
answer), never from anything else, so the lines cannot say more than the JSON does. A job is
named by its key where the caller knows it (``keys``: job id -> key; a ``collect`` answer
carries only ids).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from domain.delegation.display import JobFacts, clipped, job_line, mark

ANSWER_CHARS: Final = 400
CLAIM_CHARS: Final = 200
RESOLVE_NEXT: Final = (
    "  next: the model adjudicates each result with delegate resolve (accept or discard), "
    "binding the receipt's identity; a result is a claim to check, not proof"
)
Doc = Mapping[str, Any]
Keys = Mapping[str, str]


def counted(number: int, noun: str) -> str:
    """``1 result``, ``2 results``."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _row_line(row: Doc) -> str:
    coverage = row["coverage"]
    facts = JobFacts(
        row["key"],
        row["mode"],
        row["state"],
        row["reason"],
        coverage["covered"],
        coverage["required"],
    )
    line = job_line(facts)
    return f"  {line} · {counted(row['requestsConsumed'], 'request')}"


def _batch_lines(batch: Doc) -> list[str]:
    head = f"batch {batch['batchId']} · policy {batch['policyGeneration']}"
    head += f" · task {batch['taskGeneration']}" + (" · cancelled" if batch["cancelled"] else "")
    return [head, *(_row_line(row) for row in batch["jobs"])]


def status_lines(doc: Doc, _keys: Keys | None = None) -> list[str]:
    """``status`` (or ``renew``): every job with its state and, if it ended without a usable
    result, why; the session's allowance when the answer covers the session."""
    if "batches" not in doc:
        return [f"delegate {doc['op']}", *_batch_lines(doc)]
    ledger = doc["ledger"]
    head = (
        f"delegate {doc['op']} — session {doc['session']} · {ledger['free']} of "
        f"{ledger['allowance']} requests free ({ledger['consumed']} consumed, "
        f"{ledger['reserved']} reserved)"
    )
    if not doc["batches"]:
        return [head, "  no batches: nothing delegated in this session"]
    return [head, *(line for batch in doc["batches"] for line in _batch_lines(batch))]


def _item_lines(item: Doc, keys: Keys) -> list[str]:
    receipt = item["receipt"]
    job_id = receipt["identity"]["jobId"]
    state = receipt["hostStatus"]
    result = item["result"]
    head = f"  {mark(state)} {keys.get(job_id, job_id)} ({job_id}) {state}"
    if result is None:
        failure = receipt["observations"]["failure"]
        why = receipt["problem"] or receipt["reason"] or (failure or {}).get("reason")
        return [head + (f": {clipped(why)}" if why else "")]
    covered = sum(c["state"] != "uncovered" for c in result["coverage"])
    head += f" · {result['status']} · {covered}/{len(result['coverage'])} covered"
    lines = [f"{head} · {counted(len(result['findings']), 'finding')}"]
    lines.append(f"    answer: {clipped(result['answer'], ANSWER_CHARS)}")
    for finding in result["findings"]:
        lines.append(
            f"    finding {finding['findingId']} ({finding['basis']}): "
            f"{clipped(finding['claim'], CLAIM_CHARS)}"
        )
    lines += [
        f"    missing: {clipped(m['neededEvidence'], CLAIM_CHARS)}" for m in result["missing"]
    ]
    if receipt["problem"]:
        lines.append(f"    problem: {clipped(receipt['problem'])}")
    return lines


def collect_lines(doc: Doc, keys: Keys | None = None) -> list[str]:
    """``collect``: each result with its answer, findings and what is missing, what expired
    and why, what is still pending, and what the model does next."""
    known = keys or {}
    items, expired, pending = doc["items"], doc["expired"], doc["pending"]
    head = (
        f"delegate collect — batch {doc['batchId']}: {counted(len(items), 'result')} · "
        f"{len(expired)} expired · {len(pending)} pending"
    )
    lines = [head]
    for item in items:
        lines += _item_lines(item, known)
    for gone in expired:
        lines.append(f"  ✗ {known.get(gone['jobId'], gone['jobId'])} expired: {gone['reason']}")
    if pending:
        lines.append("  pending: " + ", ".join(known.get(job, job) for job in pending))
    if items:
        lines.append(RESOLVE_NEXT)
    return lines


def _run_lines(doc: Doc, _keys: Keys) -> list[str]:
    limits = doc["effectiveLimits"]
    lines = [
        f"delegate run — batch {doc['batchId']}: {counted(len(doc['jobs']), 'job')} · maxRequests "
        f"{limits['maxRequests']} each · deadline {limits['deadlineMs'] // 1000} s"
    ]
    for row in doc["jobs"]:
        what = "already active (deduplicated)" if row["deduplicated"] else "admitted"
        lines.append(f"  … {row['key']} ({row['jobId']}) {what}")
    return lines


def _follow_up_lines(doc: Doc, keys: Keys) -> list[str]:
    job = keys.get(doc["jobId"], doc["jobId"])
    return [
        f"delegate follow_up — job {job}: attempt {doc['attemptId']} queued after "
        f"{doc['priorAttemptId']}, {counted(doc['reserved'], 'request')} left to it"
    ]


def _resolve_lines(doc: Doc, keys: Keys) -> list[str]:
    job = keys.get(doc["jobId"], doc["jobId"])
    return [
        f"delegate resolve — job {job}: {doc['disposition']}, now {doc['state']} "
        "(records the review; authorizes no action)"
    ]


def _cancel_lines(doc: Doc, keys: Keys) -> list[str]:
    cancelled = [keys.get(job, job) for job in doc["cancelled"]]
    lines = [
        f"delegate cancel — batch {doc['batchId']}: {counted(len(cancelled), 'job')} cancelled"
    ]
    if cancelled:
        lines.append("  ✗ " + ", ".join(cancelled))
    if doc["stillSettling"]:
        lines.append(f"  {counted(len(doc['stillSettling']), 'attempt')} still settling")
    return lines


def _capture_lines(doc: Doc, _keys: Keys) -> list[str]:
    sources, receipts = (
        counted(len(doc["sources"]), "source"),
        counted(len(doc["receipts"]), "receipt"),
    )
    lines = [f"delegate capture — {sources} · {receipts}"]
    for source in doc["sources"]:
        lines.append(
            f"  {source['sourceId']} {source['location']} · {source['lines']} lines · "
            f"{source['provenance']}"
        )
    return lines


_BY_OP: Final[Mapping[str, Callable[[Doc, Keys], list[str]]]] = {
    "status": status_lines,
    "renew": status_lines,
    "collect": collect_lines,
    "run": _run_lines,
    "follow_up": _follow_up_lines,
    "resolve": _resolve_lines,
    "cancel": _cancel_lines,
    "capture": _capture_lines,
}


def outcome_lines(doc: Doc, keys: Keys | None = None) -> list[str]:
    """The lines for any operation's answer (``doc['op']`` chooses)."""
    return _BY_OP[doc["op"]](doc, keys or {})
