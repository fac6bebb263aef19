"""The trace's handoff, validation and artifact events (seed 004 "Coordination events").

* ``handoff.accepted`` (kind ``handoff``): one per handoff a consumer's prompt carries, written
  just before the consumer's span starts, linked to the producer's span; the consumer then
  links to it (``flow.depends_on`` names ``<producer>.handoff``), not around it, since the
  cleaning, the scan and the policy sit between a child's output and what the next prompt
  carried. A quarantined handoff is accepted too: the recipient ran, on the marker
  (``payload_withheld``).
* ``handoff.rejected``: kind ``handoff`` when the policy refused the boundary
  (``rejected:HANDOFF_POLICY_VIOLATION``, the recipient never spawned), kind ``validation``
  when a contracted result another role was to consume failed its return check
  (``rejected:<code>``).
* ``envelope.validated`` / ``envelope.rejected`` (kind ``validation``): the same check at a
  terminal (parent-facing) contracted report, which is not a handoff.
* ``artifact.referenced`` / ``artifact.rejected`` (kind ``artifact``): after each of those, one
  per artifact the envelope declared.

Events carry shapes, sizes, ids, paths and digests: never the summary prose, the evidence or
the envelope's ``data`` (pi-flows: a span must not become a second copy of the payload).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from application.flows.flow_spans import FlowSpans
from application.ports import AttributeValue, SpanRef
from domain.errors import ErrorCode
from domain.flows import trace_spans as ts
from domain.flows.handoff_envelope import TYPED, HandoffFacts
from domain.flows.handoff_record import HandoffAction, HandoffRecord
from domain.flows.runs import ChildJob, RunResult

# The return check's refusals: a contracted result that was not consumed.
RETURN_CODES = frozenset(
    {
        ErrorCode.RETURN_ENVELOPE_INVALID,
        ErrorCode.RETURN_CONTRACT_MISMATCH,
        ErrorCode.RETURN_DIGEST_MISMATCH,
        ErrorCode.RETURN_ENVELOPE_INCOMPLETE,
    }
)
# Markers that ask for secrets or a channel out: propagating one is a sensitive request.
_SENSITIVE = ("exfiltration_request", "exfiltration_channel")
_LIST_CAP = 1024


def dependencies(resolved: Sequence[tuple[str, SpanRef | None]]) -> dict[str, AttributeValue]:
    """``flow.depends_on*`` for these keys and the spans they resolved to (``None``: none)."""
    if not resolved:
        return {}
    keys, cut = ts.joined([key for key, _ref in resolved])
    found: dict[str, AttributeValue] = {
        ts.DEPENDS_ON: keys,
        ts.DEPENDS_ON_TRUNCATED: cut,
        ts.DEPENDS_ON_SPAN_IDS: ",".join(ref.span_id for _key, ref in resolved if ref is not None),
    }
    unresolved = [key for key, ref in resolved if ref is None]
    if unresolved:
        found[ts.DEPENDS_ON_UNRESOLVED], found[ts.DEPENDS_ON_UNRESOLVED_TRUNCATED] = ts.joined(
            unresolved
        )
    return found


def consume(trace: FlowSpans, job: ChildJob) -> dict[str, SpanRef]:
    """The handoffs ``job``'s prompt carries, each as its event (and its artifacts' events),
    before the job's own span; per producer key, the event the consumer links through."""
    return {
        record.source: _handoff(trace, record, "handoff.accepted", "accepted")
        for record in job.handoffs
    }


def refused_handoffs(trace: FlowSpans, records: Sequence[HandoffRecord]) -> None:
    """The boundaries the ``fail`` policy refused (their recipients never spawned)."""
    code = ErrorCode.HANDOFF_POLICY_VIOLATION
    for record in records:
        if record.action is HandoffAction.FAILED:
            _handoff(trace, record, "handoff.rejected", f"rejected:{code}", code)


def validation(trace: FlowSpans, job: ChildJob, result: RunResult) -> None:
    """A contracted run's return check, once it settled: refused, as ``handoff.rejected``
    where another role was to consume it, else ``envelope.rejected``; passed at a terminal
    report, ``envelope.validated`` (a passed result another role consumes is recorded where
    it crosses, as ``handoff.accepted``)."""
    if job.contract is None:
        return
    rejected = result.error_code in RETURN_CODES
    if not rejected and (job.consumed or not result.ok or result.envelope is None):
        return
    facts = HandoffFacts(
        compatibility=TYPED,
        contract_id=result.contract_id,
        agent=result.agent,
        step=result.step,
        status=str(result.envelope["status"]) if result.envelope is not None else "",
        artifacts=result.artifacts,
        constraint_ids=result.constraint_ids,
    )
    if result.envelope is not None:
        facts = HandoffFacts.of(result.handoff(), result.constraint_ids)
    slot = f"{job.key}.{'handoff' if job.consumed else 'validation'}"
    acceptance = f"rejected:{result.error_code}" if rejected else "accepted"
    attributes = {
        **_facts(trace, facts),
        ts.HANDOFF + "acceptance": acceptance,
        **_capture(trace),
    }
    producer = trace.unit(job.key)
    if rejected:
        name = "handoff.rejected" if job.consumed else "envelope.rejected"
    else:
        name = "envelope.validated"
    span = trace.event(
        name,
        ts.EventKind.VALIDATION,
        reason=f"return envelope of {job.key}: {acceptance}",
        unit=slot,
        code=result.error_code if rejected else None,
        attributes={**attributes, **dependencies([(job.key, producer)])},
        links=(producer,) if producer is not None else (),
    )
    _artifacts(trace, facts, job.key, (slot, span), result.error_code if rejected else None)


def _handoff(
    trace: FlowSpans,
    record: HandoffRecord,
    name: str,
    acceptance: str,
    code: ErrorCode | None = None,
) -> SpanRef:
    producer = trace.unit(record.source)
    attributes: dict[str, AttributeValue] = {
        **(_facts(trace, record.facts) if record.facts is not None else {}),
        **_policy(record),
        ts.HANDOFF + "acceptance": acceptance,
        **_capture(trace),
        **dependencies([(record.source, producer)]),
    }
    found = [*record.markers, *(f"{m} (compositional)" for m in record.compositional)]
    slot = f"{record.source}.handoff"
    span = trace.event(
        name,
        ts.EventKind.HANDOFF,
        reason=f"handoff {record.source} → {record.target}: {record.action}"
        + (f" ({', '.join(found)})" if found else ""),
        unit=slot,
        code=code,
        attributes=attributes,
        links=(producer,) if producer is not None else (),
    )
    if record.facts is not None:
        _artifacts(trace, record.facts, record.source, (slot, span), None)
    return span


def _facts(trace: FlowSpans, facts: HandoffFacts) -> dict[str, AttributeValue]:
    key = ts.HANDOFF
    found: dict[str, AttributeValue] = {
        key + "compatibility": facts.compatibility,
        key + "contract_id": facts.contract_id or ts.LEGACY_CONTRACT,
        key + "from_agent": trace.bounded(facts.agent, cap=ts.ID_CAP_CHARS)[0],
        key + "evidence_count": facts.evidence,
        key + "artifact_count": len(facts.artifacts),
        key + "digest_count": facts.digests,
        key + "changed_state_count": facts.changed_state,
        key + "unresolved_count": facts.unresolved,
        key + "retryable": facts.retryable,
    }
    if facts.status:
        found[key + "status"] = facts.status
    if facts.step is not None:
        found[key + "from_step"] = facts.step
    if facts.artifacts and trace.call.record_content:
        paths, _cut = ts.joined([artifact.path for artifact in facts.artifacts])
        found[key + "artifact_refs"] = trace.bounded(paths, cap=_LIST_CAP)[0]
    elif facts.artifacts:
        # Fixed-size and content-free: never cut (a cut would leave a broken digest unmarked).
        found[key + "artifact_ref_digests"] = ",".join(
            _path_digest(trace, artifact.path) for artifact in facts.artifacts
        )
    if facts.constraint_ids:
        found[key + "preserved_constraint_ids"] = ",".join(facts.constraint_ids)
    return found


def _policy(record: HandoffRecord) -> dict[str, AttributeValue]:
    key = ts.HANDOFF
    labels = [*record.markers, *record.compositional]
    found: dict[str, AttributeValue] = {
        key + "raw_bytes": record.raw_bytes,
        key + "carried_bytes": record.carried_bytes,
        # Changed or withheld on the way: stripped, redacted, cut, or not carried at all.
        key + "filtered": not record.crossed
        or bool(record.stripped or record.redactions)
        or record.carried_bytes < record.raw_bytes,
        key + "policy": str(record.policy),
        key + "policy_action": str(record.action),
        key + "compositional": bool(record.compositional),
        key + "scan_flagged": bool(labels),
        key + "payload_propagated": record.crossed,
        key + "payload_withheld": not record.crossed,
        key + "sensitive_request_propagated": record.crossed
        and any(label in _SENSITIVE for label in labels),
    }
    if labels:
        found[key + "injection_warnings"] = ",".join(
            [*record.markers, *(f"{m}:compositional" for m in record.compositional)]
        )
    return found


def _capture(trace: FlowSpans) -> dict[str, AttributeValue]:
    return {
        ts.HANDOFF + "content_recorded": trace.call.record_content,
        ts.HANDOFF + "redaction_enabled": trace.call.redact_secrets,
    }


def _artifacts(
    trace: FlowSpans,
    facts: HandoffFacts,
    source: str,
    slot: tuple[str, SpanRef],
    code: ErrorCode | None,
) -> None:
    """One event per declared artifact, after the event in ``slot`` it hangs off: referenced
    when the envelope passed its check, rejected (with the check's code) when it did not."""
    for index, artifact in enumerate(facts.artifacts, start=1):
        attributes: dict[str, AttributeValue] = {
            ts.ARTIFACT_PATH_DIGEST: _path_digest(trace, artifact.path),
            ts.ARTIFACT_FROM_AGENT: trace.bounded(facts.agent, cap=ts.ID_CAP_CHARS)[0],
            ts.ARTIFACT_CONTRACT_ID: facts.contract_id or ts.LEGACY_CONTRACT,
            ts.ARTIFACT_DIGEST_DECLARED: artifact.sha256 is not None,
            **dependencies([slot]),
        }
        changed = False  # without recordContent nothing of the path's text is recorded
        if trace.call.record_content:
            attributes[ts.ARTIFACT_PATH], changed = trace.bounded(artifact.path, cap=_LIST_CAP)
        if artifact.sha256 is not None:
            attributes[ts.ARTIFACT_DIGEST] = f"sha256:{artifact.sha256}"
        trace.event(
            "artifact.rejected" if code is not None else "artifact.referenced",
            ts.EventKind.ARTIFACT,
            reason=f"artifact {index} of {source}",
            unit=f"{source}.artifact-{index}",
            code=code,
            attributes=attributes,
            links=(slot[1],),
            changed=changed,
        )


def _path_digest(trace: FlowSpans, path: str) -> str:
    """``sha256:`` of the path as a span would record it, uncut: redacted under
    ``redactSecrets`` (so a digest cannot confirm a guessed secret that redaction hides), and
    the same for a path a check refused as for one it passed (whose envelope was redacted
    already; redaction leaves redacted text as it is)."""
    text = trace.redacted(path)
    # ``surrogatepass``: a child's text may hold a lone surrogate; it still names one digest.
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
