"""The span mechanics under a flow call's trace: the file the spans go to, the root span,
starting and ending spans on one clock, zero-duration events, what every span carries,
redaction and caps of recorded values, and the counts the export's health is checked against.
What the flow's spans say is ``application.flows.tracing``'s and
``application.flows.trace_handoffs``'s."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping, Sequence

from application.ports import AttributeValue, Clock, SpanEnd, SpanRef, SpanStart, Tracer
from domain.errors import ErrorCode
from domain.flows import trace_spans as ts
from domain.flows.call import FlowCall
from domain.flows.trace_identity import derived_ids


class FlowSpans:
    """One flow call's spans as written. Thread-safe: children start and end on the
    dispatcher's threads."""

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
        # Why the file could not be opened (``None``: it was), and the export's first write
        # error once it closed.
        self.unwritable = unwritable
        self.last_error: str | None = None
        self._lock = threading.Lock()
        self._expected = 0
        # Spans started, by ``flow.span_role``.
        self._roles: Counter[str] = Counter()
        # Spans with a value redacted or cut (once each, however many values).
        self._redacted: set[str] = set()
        # Each dispatched run's child span and dependency keys (the critical path's edges).
        self._units: dict[str, SpanRef] = {}
        self._depends: dict[str, tuple[str, ...]] = {}
        self._common_attributes, self._common_changed = self._common()
        self._base_ns = round(clock.now().timestamp() * 1e9)
        self._base_monotonic = clock.monotonic()
        derived = derived_ids(call.trace_context, str(call.mode))
        self.root = self._start(
            f"flow.{call.mode}",
            None,
            (),
            {ts.SPAN_ROLE: str(ts.SpanRole.ROOT)},
            ts.KIND_CHAIN,
            ids=SpanRef(*derived) if derived is not None else None,
        )

    @property
    def call(self) -> FlowCall:
        return self._call

    def started(self, role: ts.SpanRole) -> int:
        """How many spans of ``role`` were started."""
        with self._lock:
            return self._roles[str(role)]

    def unit(self, key: str) -> SpanRef | None:
        """The child span of the run ``key``, once it started."""
        with self._lock:
            return self._units.get(key)

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
        text, cut = self.bounded(reason)
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
        at = self._now_ns()
        span = self._start(name, self.root, links, found, ts.KIND_CHAIN, at=at)
        self._mark(span, changed)
        self._end(span, {}, None, at)
        return span

    def bounded(self, text: str, cap: int = ts.VALUE_CAP_BYTES) -> tuple[str, bool]:
        """``text`` as a span may record it: redacted under ``redactSecrets``, then capped;
        whether that changed it."""
        return ts.bounded(text, redact_on=self._call.redact_secrets, home=self._home, cap=cap)

    def redacted(self, text: str) -> str:
        """``text`` as a span may record it before any cap: redacted under ``redactSecrets``."""
        return ts.redacted(text, redact_on=self._call.redact_secrets, home=self._home)

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
            found[ts.TRACE_LABEL], cut = self.bounded(self._call.trace_label, cap=ts.ID_CAP_CHARS)
            changed |= cut
        context = self._call.trace_context
        if context is not None:
            for field, key in ts.CONTEXT_KEYS.items():
                value = getattr(context, field)
                if isinstance(value, str):
                    found[key], cut = self.bounded(value, cap=ts.ID_CAP_CHARS)
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
        ids: SpanRef | None = None,
    ) -> SpanRef:
        with self._lock:
            self._expected += 1
            self._roles[str(attributes.get(ts.SPAN_ROLE))] += 1
        span = self._tracer.start_span(
            SpanStart(
                name,
                parent,
                links,
                {**self._common_attributes, ts.SPAN_KIND: kind, **attributes},
                self._now_ns() if at is None else at,
                ids,
            )
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
            span, SpanEnd(attributes, error, self._now_ns() if at is None else at)
        )
