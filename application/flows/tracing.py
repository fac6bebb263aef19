"""A flow call's trace: which spans it writes, what each says, and the export's own health.

One root span per flow call; one stage span per dispatched batch (a chain step, a graph wave,
a parallel fan-out, a single run), parent of its children; one child span per dispatched run;
zero-duration event spans for what moves the flow without a child (a refused call, a skipped
run, a cancel). Dependencies are links and ``flow.depends_on*`` attributes, never parentage.
The spans go through the ``Tracer`` port; this module only decides their content, bounds and
redacts it, and counts (seed 004 "Trace export", docs/flows.md "Traces").
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping, Sequence

from application.flows.trace_handoffs import dependencies, refused_handoffs
from application.ports import (
    AttributeValue,
    Clock,
    SpanRef,
    Tracer,
)
from domain.errors import ErrorCode
from domain.flows import trace_spans as ts
from domain.flows.call import FlowCall
from domain.flows.errors import FlowError
from domain.flows.modes import FlowOutcome
from domain.flows.roles import ResolvedRole
from domain.flows.runs import ChildJob, RunResult, RunStatus


def prompt_version(text: str) -> str:
    """pi-flows' ``flow.agent_prompt_version``: ``sha256:`` and 12 hex of the canonical JSON
    of the system prompt that ran."""
    canonical = json.dumps(text, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return "sha256:" + hashlib.sha256(canonical).hexdigest()[:12]


class FlowTrace:
    """One flow call's spans. Thread-safe: children start and end on the dispatcher's threads."""

    def __init__(
        self,
        tracer: Tracer,
        call: FlowCall,
        clock: Clock,
        *,
        invocation_id: str,
        path: str,
        home: str | None,
        unwritable: str | None = None,
    ) -> None:
        self._tracer = tracer
        self._call = call
        self._clock = clock
        self._home = home
        self.invocation_id = invocation_id
        self.path = path
        # Why the file could not be opened (``None``: it was).
        self.unwritable = unwritable
        self.last_error: str | None = None
        self._lock = threading.Lock()
        self._expected = 0
        # Spans with a value redacted or cut (once each, however many values).
        self._redacted: set[str] = set()
        self._units: dict[str, SpanRef] = {}
        # Each dispatched run's dependency keys: the critical path's edges.
        self._depends: dict[str, tuple[str, ...]] = {}
        self._stages = 0
        self._events = 0
        self._children = 0
        self._common_attributes, self._common_changed = self._common()
        self._base_ns = round(clock.now().timestamp() * 1e9)
        self._base_monotonic = clock.monotonic()
        self.root = self._start(
            f"flow.{call.mode}", None, (), {ts.SPAN_ROLE: str(ts.SpanRole.ROOT)}, ts.KIND_CHAIN
        )

    # -- what the flow emits ---------------------------------------------------------------

    def stage(self, jobs: Sequence[ChildJob]) -> SpanRef:
        key = jobs[0].stage if jobs and jobs[0].stage else f"batch-{self._stages + 1}"
        with self._lock:
            self._stages += 1
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

    @property
    def call(self) -> FlowCall:
        return self._call

    def unit(self, key: str) -> SpanRef | None:
        """The child span of the run ``key``, once it started."""
        with self._lock:
            return self._units.get(key)

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
            self._children += 1
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
            attributes[ts.DELEGATION_REASON], cut_why = self._bounded(self._call.why)
            changed |= cut_why
        if job.contract is not None:
            authority, cut_authority = ts.contract_attributes(job.contract, self._bounded)
            attributes.update(authority)
            changed |= cut_authority
        if self._call.record_content:
            attributes[ts.INPUT_VALUE], cut_input = self._bounded(job.prompt)
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
            attributes[ts.OUTPUT_VALUE], changed = self._bounded(result.output)
        error = None
        if result.error_code is not None:
            attributes[ts.ERROR_CODE] = str(result.error_code)
            error, cut = self._bounded(f"{result.error_code}: {result.error or ''}")
            changed |= cut
        self._mark(span, changed)
        self._end(span, attributes, error)

    def approval(self, files: Sequence[str], *, approved: bool) -> None:
        """The person's answer on the project files a call uses (``kind:name``): one
        ``approval.granted`` or ``approval.declined`` event naming them."""
        outcome = "granted" if approved else "declined"
        named = [self._bounded(file) for file in files]
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

    def event(
        self,
        name: str,
        kind: ts.EventKind,
        *,
        reason: str,
        unit: str | None = None,
        code: ErrorCode | None = None,
        attributes: Mapping[str, AttributeValue] | None = None,
        links: Sequence[SpanRef] = (),
        changed: bool = False,
    ) -> SpanRef:
        """A zero-duration coordination boundary under the root (``attributes``: the event's
        own, e.g. a budget event's ``flow.budget.*``; ``changed``: redaction or a cap changed
        one of them)."""
        text, cut = self._bounded(reason)
        changed |= cut
        found: dict[str, AttributeValue] = {
            **(attributes or {}),
            ts.SPAN_ROLE: str(ts.SpanRole.EVENT),
            ts.EVENT_KIND: str(kind),
            ts.EVENT_REASON: text,
        }
        if unit is not None:
            found[ts.UNIT_KEY] = ts.escape_key(unit)
        if code is not None:
            found[ts.ERROR_CODE] = str(code)
        with self._lock:
            self._events += 1
        at = self._now_ns()
        span = self._start(name, self.root, links, found, ts.KIND_CHAIN, at=at)
        self._mark(span, changed)
        self._end(span, {}, None, at)
        return span

    def outcome(self, outcome: FlowOutcome) -> None:
        """Events for the runs that never spawned (a stopped chain, a blocked graph node), and
        the handoffs the policy refused (their recipients never spawned either)."""
        refused_handoffs(self, outcome.handoffs)
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
            message, changed = self._bounded(f"{error.code}: {error.message}")
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
        path, _ = self._bounded(self.path, cap=512)
        found: dict[str, object] = {
            "file": path,
            "invocationId": self.invocation_id,
            "traceId": self.root.trace_id,
            "rootSpanId": self.root.span_id,
            "spans": health.document(),
            "structure": {
                "stages": self._stages,
                "children": self._children,
                "events": self._events,
            },
        }
        if self._call.trace_label is not None:
            found["label"] = self._call.trace_label
        reason = self.unwritable or self.last_error
        if reason:
            found["error"], _ = self._bounded(reason, cap=512)
        return found

    # -- mechanics -------------------------------------------------------------------------

    def bounded(self, text: str, cap: int = ts.VALUE_CAP_BYTES) -> tuple[str, bool]:
        """``text`` as a span may record it: redacted under ``redactSecrets``, then capped;
        whether that changed it."""
        return self._bounded(text, cap)

    def redacted(self, text: str) -> str:
        """``text`` as a span may record it before any cap: redacted under ``redactSecrets``."""
        return ts.redacted(text, redact_on=self._call.redact_secrets, home=self._home)

    def _bounded(self, text: str, cap: int = ts.VALUE_CAP_BYTES) -> tuple[str, bool]:
        return ts.bounded(text, redact_on=self._call.redact_secrets, home=self._home, cap=cap)

    def _mark(self, span: SpanRef, changed: bool) -> None:
        if changed or self._common_changed:
            with self._lock:
                self._redacted.add(span.span_id)

    def _common(self) -> tuple[dict[str, AttributeValue], bool]:
        """What every span carries, and whether redaction or a cap changed any of it."""
        changed = False
        found: dict[str, AttributeValue] = {
            ts.INVOCATION_ID: self.invocation_id,
            ts.MODE: str(self._call.mode),
        }
        if self._call.trace_label is not None:
            found[ts.TRACE_LABEL], cut = self._bounded(self._call.trace_label, cap=ts.ID_CAP_CHARS)
            changed |= cut
        context = self._call.trace_context
        if context is not None:
            for field, key in ts.CONTEXT_KEYS.items():
                value = getattr(context, field)
                if isinstance(value, str):
                    found[key], cut = self._bounded(value, cap=ts.ID_CAP_CHARS)
                    changed |= cut
                elif value is not None:
                    found[key] = value
        return found, changed

    def _now_ns(self) -> int:
        return self._base_ns + round((self._clock.monotonic() - self._base_monotonic) * 1e9)

    def _start(
        self,
        name: str,
        parent: SpanRef | None,
        links: Sequence[SpanRef],
        attributes: Mapping[str, AttributeValue],
        kind: str,
        *,
        at: int | None = None,
    ) -> SpanRef:
        with self._lock:
            self._expected += 1
        span = self._tracer.start_span(
            name,
            parent=parent,
            links=links,
            attributes={**self._common_attributes, ts.SPAN_KIND: kind, **attributes},
            start_ns=self._now_ns() if at is None else at,
        )
        self._mark(span, False)
        return span

    def _end(
        self,
        span: SpanRef,
        attributes: Mapping[str, AttributeValue],
        error: str | None,
        at: int | None = None,
    ) -> None:
        self._tracer.end_span(
            span, attributes=attributes, error=error, end_ns=self._now_ns() if at is None else at
        )
