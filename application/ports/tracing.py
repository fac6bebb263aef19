"""The port to a trace exporter: spans of one flow call, written where the caller asked.

The application decides what a span says (``application.flows.tracing``, attribute names in
``domain.flows.trace_spans``); an adapter turns each into an OpenTelemetry span and writes it
(``adapters.tracing.otel``: one JSON line per span, written when the span ends). Times are Unix
nanoseconds the application computes from its ``Clock``, never the exporter's own clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import attrs

__all__ = [
    "AttributeValue",
    "ExportCounts",
    "SpanEnd",
    "SpanRef",
    "SpanStart",
    "TraceSinks",
    "TraceUnwritable",
    "Tracer",
]

# What an OpenTelemetry attribute may hold (homogeneous sequences only).
AttributeValue = str | bool | int | float | Sequence[str] | Sequence[int]


@attrs.frozen
class SpanRef:
    """A started span: its ids as lowercase hex (trace 32, span 16 digits)."""

    trace_id: str
    span_id: str


@attrs.frozen
class ExportCounts:
    """What the exporter did so far: rows written whole, and exports that failed (a write or
    the final flush refused by the operating system), with the first failure's reason."""

    written: int = 0
    failed: int = 0
    first_error: str | None = None


@attrs.frozen
class SpanStart:
    """What a span starts with: a root when ``parent`` is ``None``; ``links`` are dependency
    links."""

    name: str
    parent: SpanRef | None
    links: Sequence[SpanRef]
    attributes: Mapping[str, AttributeValue]
    start_ns: int
    # A root's ids chosen by the flow (``domain.flows.trace_identity``): the exporter uses
    # them instead of random ones.
    ids: SpanRef | None = None


@attrs.frozen
class SpanEnd:
    """What a span ends with: more attributes, and its status (``error``: an error status
    with that message, else OK)."""

    attributes: Mapping[str, AttributeValue]
    error: str | None
    end_ns: int


class TraceUnwritable(Exception):
    """The trace file cannot be opened for appending (its reason is the message)."""


class Tracer(Protocol):
    """One flow call's spans. Safe to use from several threads (children end concurrently)."""

    def start_span(self, start: SpanStart) -> SpanRef:
        """Start a span; its reference, for its children, links and end."""
        ...

    def end_span(self, span: SpanRef, end: SpanEnd) -> None:
        """Add the end's attributes, set the status, end the span and export it. An export
        failure is counted, never raised."""
        ...

    def counts(self) -> ExportCounts: ...

    def close(self) -> ExportCounts:
        """Flush what was written to stable storage and release the file; the final counts."""
        ...


class TraceSinks(Protocol):
    def open(self, path: str) -> Tracer:
        """A tracer appending to ``path`` (absolute), created 0600 if missing; raises
        ``TraceUnwritable`` when it cannot be opened for appending or is not a regular file."""
        ...
