"""A flow call's trace: which spans it writes, what each says, and the export's own health.

One root span per flow call; one stage span per dispatched batch (a chain step, a graph wave,
a parallel fan-out, a single run), parent of its children; one child span per dispatched run;
zero-duration event spans for what moves the flow without a child (a refused call, a skipped
run, a cancel). Dependencies are links and ``flow.depends_on*`` attributes, never parentage.
The spans go through the ``Tracer`` port by way of ``application.flows.flow_spans`` (which
bounds, redacts and counts them); this module decides what the flow's own spans say (seed 004
"Trace export", docs/flows.md "Traces").
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence

from application.flows.flow_spans import FlowSpans
from application.flows.trace_handoffs import dependencies, refused_handoffs
from application.ports import AttributeValue, SpanRef
from domain.flows import trace_spans as ts
from domain.flows.errors import FlowError
from domain.flows.mode_parts import FlowOutcome
from domain.flows.roles import ResolvedRole
from domain.flows.runs import ChildJob, RunResult, RunStatus


def prompt_version(text: str) -> str:
    """pi-flows' ``flow.agent_prompt_version``: ``sha256:`` and 12 hex of the canonical JSON
    of the system prompt that ran."""
    canonical = json.dumps(text, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return "sha256:" + hashlib.sha256(canonical).hexdigest()[:12]


class FlowTrace(FlowSpans):
    """One flow call's spans: its stages, children, approvals and outcome on the span
    mechanics, and the export's health once it finishes."""

    def stage(self, jobs: Sequence[ChildJob]) -> SpanRef:
        key = (
            jobs[0].stage
            if jobs and jobs[0].stage
            else f"batch-{self.started(ts.SpanRole.STAGE) + 1}"
        )
        return self._start(
            f"stage.{key}",
            self.root,
            (),
            {
                ts.SPAN_ROLE: str(ts.SpanRole.STAGE),
                ts.STAGE_KEY: ts.escape_key(key),
                ts.STAGE_SPAN_COUNT: len(jobs),
            },
            ts.KIND_CHAIN,
        )

    def end_stage(self, stage: SpanRef, results: Sequence[RunResult]) -> None:
        failed = [r for r in results if not r.ok]
        status = "completed" if not failed else "partial"
        if failed and len(failed) == len(results):
            status = "failed"
        self._end(stage, {ts.STATUS: status}, None)

    def start_child(
        self,
        job: ChildJob,
        stage: SpanRef | None,
        role: ResolvedRole,
        through: Mapping[str, SpanRef] | None = None,
    ) -> SpanRef:
        """``through``: per dependency key, the handoff event its output crossed (seed 004: a
        consumer links through the boundary that produced what it read, ``<key>.handoff``,
        not around it). The critical path still follows the runs themselves."""
        through = through or {}
        with self._lock:
            resolved = [
                (f"{key}.handoff", through[key]) if key in through else (key, self._units.get(key))
                for key in job.depends_on
            ]
            self._depends[job.key] = job.depends_on
        links = tuple(ref for _key, ref in resolved if ref is not None)
        attributes: dict[str, AttributeValue] = {
            ts.SPAN_ROLE: str(ts.SpanRole.CHILD),
            ts.UNIT_KEY: ts.escape_key(job.key),
            ts.AGENT: job.role.agent,
            ts.THINKING_LEVEL_VERIFIED: False,
            ts.ALLOWED_TOOLS: role.tools.describe(),
            ts.AGENT_PROMPT_VERSION: prompt_version(role.system_prompt),
        }
        if job.stage:
            attributes[ts.STAGE_KEY] = ts.escape_key(job.stage)
        if role.model is not None:
            attributes[ts.MODEL_NAME] = role.model
        if role.thinking is not None:
            attributes[ts.THINKING_LEVEL] = role.thinking
        attributes.update(dependencies(resolved))
        changed = False
        if self._call.why is not None:
            attributes[ts.DELEGATION_REASON], cut_why = self.bounded(self._call.why)
            changed |= cut_why
        if job.contract is not None:
            authority, cut_authority = ts.contract_attributes(job.contract, self.bounded)
            attributes.update(authority)
            changed |= cut_authority
        if self._call.record_content:
            attributes[ts.INPUT_VALUE], cut_input = self.bounded(job.prompt)
            changed |= cut_input
        span = self._start(f"child.{job.key}", stage or self.root, links, attributes, ts.KIND_AGENT)
        with self._lock:
            self._units[job.key] = span
        self._mark(span, changed)
        return span

    def end_child(
        self,
        span: SpanRef,
        result: RunResult,
        budget: Mapping[str, AttributeValue] | None = None,
    ) -> None:
        """``budget``: the budget state after the run (``flow.budget.*``)."""
        usage = result.usage
        attributes: dict[str, AttributeValue] = {
            **(budget or {}),
            ts.DURATION_MS: result.duration_ms,
            ts.STATUS: str(result.status),
            ts.TOKENS_PROMPT: usage.input_tokens,
            ts.TOKENS_COMPLETION: usage.output_tokens,
            ts.TOKENS_TOTAL: usage.input_tokens + usage.output_tokens,
            ts.COST_USD: usage.cost,
        }
        if result.enforcement is not None:
            attributes[ts.BASH_RO_ENFORCEMENT] = result.enforcement
        changed = False
        if self._call.record_content and result.output is not None:
            attributes[ts.OUTPUT_VALUE], changed = self.bounded(result.output)
        error = None
        if result.error_code is not None:
            attributes[ts.ERROR_CODE] = str(result.error_code)
            error, cut = self.bounded(f"{result.error_code}: {result.error or ''}")
            changed |= cut
        self._mark(span, changed)
        self._end(span, attributes, error)

    def approval(self, files: Sequence[str], *, approved: bool) -> None:
        """The person's answer on the project files a call uses (``kind:name``): one
        ``approval.granted`` or ``approval.declined`` event naming them."""
        outcome = "granted" if approved else "declined"
        named = [self.bounded(file) for file in files]
        self.event(
            f"approval.{outcome}",
            ts.EventKind.APPROVAL,
            reason=f"{len(files)} project file(s) {outcome}",
            attributes={
                ts.APPROVAL_OUTCOME: outcome,
                ts.APPROVAL_FILES: tuple(text for text, _ in named),
            },
            changed=any(cut for _, cut in named),
        )

    def outcome(self, outcome: FlowOutcome) -> None:
        """Events for the runs that never spawned (a stopped chain, a blocked graph node), the
        handoffs the policy refused (their recipients never spawned either), and each control
        token that steered a judging mode (``loop.judge_verdict``, ``route.decision``)."""
        refused_handoffs(self, outcome.handoffs)
        for decision in outcome.decisions:
            self.event(
                decision.name,
                ts.EventKind.STATE,
                reason=f"{decision.value} (read from the {decision.source})",
                unit=decision.unit,
                attributes={
                    ts.CONTROL_VALUE: decision.value,
                    ts.CONTROL_SOURCE: decision.source,
                },
            )
        for result in outcome.results:
            if result.status is RunStatus.SKIPPED:
                self.event(
                    "run.skipped", ts.EventKind.STATE, reason=result.error or "", unit=result.key
                )

    def refused(self, error: FlowError) -> ts.TraceHealth:
        """A call refused before any spawn: its refusal as a validation event, then the root."""
        self.event("call.refused", ts.EventKind.VALIDATION, reason=error.message, code=error.code)
        return self.finish(status="refused", elapsed_ms=0, error=error)

    def finish(
        self,
        *,
        status: str,
        elapsed_ms: int,
        results: Sequence[RunResult] = (),
        error: FlowError | None = None,
    ) -> ts.TraceHealth:
        """End the root with the flow's times and the export's health; close the exporter."""
        worker = sum(r.duration_ms for r in results if r.status is not RunStatus.SKIPPED)
        attributes: dict[str, AttributeValue] = {
            ts.STATUS: status,
            ts.ELAPSED_MS: elapsed_ms,
            ts.WORKER_MS: worker,
            ts.TOKENS_PROMPT: sum(r.usage.input_tokens for r in results),
            ts.TOKENS_COMPLETION: sum(r.usage.output_tokens for r in results),
            ts.COST_USD: sum(r.usage.cost for r in results),
        }
        with self._lock:
            depends = dict(self._depends)
        critical = ts.critical_path_ms(
            ts.UnitTiming(r.key, r.duration_ms, depends.get(r.key, ())) for r in results
        )
        attributes[ts.CRITICAL_PATH_AVAILABLE] = critical is not None
        if critical is not None:
            attributes[ts.CRITICAL_PATH_MS] = critical
        message = None
        if error is not None:
            attributes[ts.ERROR_CODE] = str(error.code)
            message, changed = self.bounded(f"{error.code}: {error.message}")
            self._mark(self.root, changed)
        before = self._tracer.counts()
        with self._lock:
            expected, redacted = self._expected, len(self._redacted)
        # The root counts itself as written: it is the row that carries these numbers.
        declared = ts.TraceHealth(expected, before.written + 1, redacted, before.failed)
        self._end(self.root, {**attributes, **declared.attributes()}, message)
        final = self._tracer.close()
        self.last_error = final.first_error
        return ts.TraceHealth(expected, final.written, redacted, final.failed)

    def document(self, health: ts.TraceHealth) -> dict[str, object]:
        """``details.trace``: where, which trace and root, and the export's health; the path
        and any write error redacted and bounded."""
        path, _ = self.bounded(self.path, cap=512)
        found: dict[str, object] = {
            "file": path,
            "invocationId": self.invocation_id,
            "traceId": self.root.trace_id,
            "rootSpanId": self.root.span_id,
            "spans": health.document(),
            "structure": {
                "stages": self.started(ts.SpanRole.STAGE),
                "children": self.started(ts.SpanRole.CHILD),
                "events": self.started(ts.SpanRole.EVENT),
            },
        }
        if self._call.trace_label is not None:
            found["label"] = self._call.trace_label
        reason = self.unwritable or self.last_error
        if reason:
            found["error"], _ = self.bounded(reason, cap=512)
        return found
