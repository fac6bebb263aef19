"""A typed in-memory trace exporter: spans as values, in the order they ended ("written").

``FakeTraceSinks(unwritable={path: reason})`` refuses to open those paths;
``fail_spans`` names spans whose export fails (counted, never written), so a test can make a
trace degrade without a real file system.
"""

from __future__ import annotations

import threading

import attrs

from application.ports import (
    AttributeValue,
    ExportCounts,
    SpanEnd,
    SpanRef,
    SpanStart,
    Tracer,
    TraceSinks,
    TraceUnwritable,
)


@attrs.define
class FakeSpan:
    name: str
    ref: SpanRef
    parent: SpanRef | None
    links: tuple[SpanRef, ...]
    attributes: dict[str, AttributeValue]
    start_ns: int
    end_ns: int | None = None
    error: str | None = None

    @property
    def role(self) -> object:
        return self.attributes.get("flow.span_role")


@attrs.define
class FakeTracer:
    path: str
    fail_spans: frozenset[str] = frozenset()
    started: list[FakeSpan] = attrs.field(factory=list)
    written: list[FakeSpan] = attrs.field(factory=list)
    failed: int = 0
    closed: bool = False
    _lock: threading.Lock = attrs.field(factory=threading.Lock)

    def start_span(self, start: SpanStart) -> SpanRef:
        with self._lock:
            ref = start.ids or SpanRef("f" * 32, f"{len(self.started) + 1:016x}")
            self.started.append(
                FakeSpan(
                    start.name,
                    ref,
                    start.parent,
                    tuple(start.links),
                    dict(start.attributes),
                    start.start_ns,
                )
            )
            return ref

    def end_span(self, span: SpanRef, end: SpanEnd) -> None:
        with self._lock:
            found = next(s for s in self.started if s.ref == span)
            assert found.end_ns is None, f"span {found.name} ended twice"
            found.attributes.update(end.attributes)
            found.end_ns = end.end_ns
            found.error = end.error
            if found.name in self.fail_spans:
                self.failed += 1
            else:
                self.written.append(found)

    def counts(self) -> ExportCounts:
        with self._lock:
            reason = "injected export failure" if self.failed else None
            return ExportCounts(len(self.written), self.failed, reason)

    def close(self) -> ExportCounts:
        self.closed = True
        return self.counts()

    # -- what tests read -------------------------------------------------------------------

    def by_role(self, role: str) -> list[FakeSpan]:
        return [s for s in self.written if s.role == role]

    def named(self, name: str) -> FakeSpan:
        return next(s for s in self.written if s.name == name)

    @property
    def root(self) -> FakeSpan:
        (root,) = self.by_role("root")
        return root


@attrs.define
class FakeTraceSinks:
    unwritable: dict[str, str] = attrs.field(factory=dict)
    fail_spans: frozenset[str] = frozenset()
    opened: list[FakeTracer] = attrs.field(factory=list)

    def open(self, path: str) -> FakeTracer:
        if path in self.unwritable:
            raise TraceUnwritable(self.unwritable[path])
        tracer = FakeTracer(path, self.fail_spans)
        self.opened.append(tracer)
        return tracer

    @property
    def last(self) -> FakeTracer:
        return self.opened[-1]


_tracer_conforms: type[Tracer] = FakeTracer
_sinks_conforms: type[TraceSinks] = FakeTraceSinks
