"""``resolve`` (seed §2): the parent's adjudication of one exact result, recorded atomically.

A decision is needed for every presented finding, citing only evidence IDs in the job's evidence
table; ``accept`` needs a ``ready`` result whose every requirement is covered with evidence (or
not applicable) and no finding left ``needs_check``;
incomplete, invalid and failed results can be discarded or held (``needs_check``) but never
accepted. Nothing is inferred from prose, collection or silence, and nothing is authorised:
the outcome names no action.
"""

from __future__ import annotations

from typing import Any

import attrs

from domain.delegation.decision import Decision, unchanged
from domain.delegation.errors import DelegationError
from domain.delegation.lifecycle import State, transition
from domain.delegation.request import ResolveRequest
from domain.delegation.session import Batch, Job, SessionState
from domain.errors import ErrorCode

HOLDABLE = frozenset({State.READY, State.INCOMPLETE, State.INVALID, State.FAILED})


def _refused(message: str) -> DelegationError:
    return DelegationError(ErrorCode.DELEGATE_STATE_REFUSED, message)


def _check_cited_evidence(job: Job, request: ResolveRequest) -> None:
    """Every evidence ID a decision cites is in the job's evidence table: the current result's
    evidence entries and the receipts granted to the job; an ID that exists nowhere is refused."""
    attempt = job.current
    table = {item["evidenceId"] for item in (attempt.result or {}).get("evidence", [])}
    table |= {receipt.receipt_id for receipt in attempt.envelope.receipts}
    for index, decision in enumerate(request.findings):
        for cited in decision.evidence_ids:
            if cited not in table:
                raise DelegationError(
                    ErrorCode.DELEGATE_EVIDENCE_UNKNOWN,
                    f"$.findings[{index}].evidenceIds: evidence {cited} is not in job "
                    f"{job.job_id}'s evidence table ({len(table)} entries); cite only IDs "
                    "that `delegate collect` shows for this result",
                )


def resolve_result(
    state: SessionState, batch: Batch, job: Job, request: ResolveRequest, now_ms: int
) -> Decision[dict[str, Any]]:
    attempt = job.current
    if attempt.state not in HOLDABLE:
        raise _refused(f"attempt {attempt.attempt_id} is {attempt.state}: nothing to resolve")
    presented = [f["findingId"] for f in (attempt.result or {}).get("findings", [])]
    decided = [d.finding_id for d in request.findings]
    if sorted(decided) != sorted(presented):
        raise DelegationError(
            ErrorCode.DELEGATE_INVALID,
            f"$.findings: decide each of the {len(presented)} presented finding(s) exactly once; "
            f"{len(decided)} decision(s) given",
        )
    _check_cited_evidence(job, request)
    if request.disposition == "accept":
        if attempt.state is not State.READY:
            raise _refused(f"a {attempt.state} result can be discarded or held, never accepted")
        assert attempt.result is not None
        uncovered = [
            c["requirementId"] for c in attempt.result["coverage"] if c["state"] == "uncovered"
        ]
        if uncovered:
            raise _refused(
                f"requirement {uncovered[0]} is uncovered: the result cannot be accepted"
            )
        unsupported = [
            c["requirementId"]
            for c in attempt.result["coverage"]
            if c["state"] == "covered" and not c["evidenceIds"]
        ]
        if unsupported:
            raise _refused(
                f"requirement {unsupported[0]} is covered with 0 evidence IDs (at least 1 "
                "needed): the result cannot be accepted; discard it or ask a follow-up"
            )
        open_findings = [d.finding_id for d in request.findings if d.decision == "needs_check"]
        if open_findings:
            raise _refused(f"finding {open_findings[0]} still needs a check: resolve it first")
    record = {
        "disposition": request.disposition,
        "findings": [
            {
                "findingId": d.finding_id,
                "decision": d.decision,
                "reason": d.reason,
                "evidenceIds": list(d.evidence_ids),
            }
            for d in request.findings
        ],
        "reason": request.reason,
        "atMs": now_ms,
    }
    attempt = attrs.evolve(attempt, disposition=record)
    target = {"accept": State.ACCEPTED, "discard": State.DISCARDED}.get(request.disposition)
    if target is None:
        state = state.with_attempt(attempt)
    else:
        attempt = attrs.evolve(attempt, state=transition(attempt.state, target))
        state = state.with_event(attempt, now_ms)
    job = state.found(attempt.attempt_id)[1]
    answer = {
        "op": "resolve",
        "batchId": batch.batch_id,
        "jobId": job.job_id,
        "attemptId": attempt.attempt_id,
        "state": str(attempt.state),
        "resultRevision": job.result_revision,
        "disposition": request.disposition,
        # Adjudication records evidence review; it starts, permits and fixes nothing.
        "authorizesAction": False,
    }
    return unchanged(state, answer)
