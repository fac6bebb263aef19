"""The trace port over the OpenTelemetry SDK: one ``TracerProvider`` per flow call, its spans
exported as JSON lines (the SDK's own ``ReadableSpan.to_json`` of each span, on one line).

Writing policy, and why:

- The file is opened once per flow call, ``O_APPEND | O_CREAT | O_NOFOLLOW``, mode 0600, and
  must be a regular file. ``O_NOFOLLOW``: the path is often under a directory the flow's children
  write, and a child is an adversary; a symlink planted at the trace path would otherwise make
  pi-squad append JSON carrying child output to whatever file it names. Keeping one descriptor
  for the whole call means a later swap of the path cannot redirect the remaining rows.
- A span is exported when it ends (``SimpleSpanProcessor``: no queue, so nothing is dropped
  in-process and the file order is end order), as one ``write`` of one whole line. With
  ``O_APPEND`` each write lands at the end of the file, so concurrent flows sharing one file
  (``PI_FLOWS_TRACE_FILE``) interleave whole rows. A write that fails part-way is a failed
  export; a newline is then attempted so the torn row cannot swallow the next one.
- One ``fsync`` when the flow's trace closes, after the root span (the row that declares what
  the trace should hold) is written, not one per span. The trace is evidence, not state
  pi-squad recovers from: a crash before the close loses at most that call's unsynced rows,
  and read-back then finds the root missing or rows short of its declared count, which it
  reports as incomplete (the honest answer). A failed ``fsync`` counts as a failed export.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_ON
from opentelemetry.trace import Link, Span, Status, StatusCode

from application.ports import (
    AttributeValue,
    ExportCounts,
    SpanEnd,
    SpanRef,
    SpanStart,
    TraceUnwritable,
)

# Fixed, so an OTEL_* variable in the caller's environment cannot cut a row's attributes.
_LIMITS = SpanLimits(
    max_span_attributes=256,
    max_events=0,
    max_links=64,
    max_span_attribute_length=None,
    max_attribute_length=None,
)
_RESOURCE = Resource({"service.name": "pi-squad"})
# O_NONBLOCK: opening a FIFO planted at the path fails or returns at once instead of hanging
# (and is then refused as not a regular file); it changes nothing for a regular file.
_FLAGS = (
    os.O_WRONLY
    | os.O_APPEND
    | os.O_CREAT
    | os.O_CLOEXEC
    | os.O_NONBLOCK
    | getattr(os, "O_NOFOLLOW", 0)
)


class JsonlSpanExporter(SpanExporter):
    """Appends each span as one JSON line to an open descriptor; counts what it wrote."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = threading.Lock()
        self._written = 0
        self._failed = 0
        self._first_error: str | None = None
        self._closed = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = SpanExportResult.SUCCESS
        with self._lock:
            for span in spans:
                line = (span.to_json(indent=None) + "\n").encode("utf-8")
                try:
                    self._write_all(line)
                except OSError as error:
                    self._fail(error)
                    result = SpanExportResult.FAILURE
                else:
                    self._written += 1
        return result

    def _write_all(self, data: bytes) -> None:
        if self._closed:
            raise OSError("the trace file is already closed")
        view = memoryview(data)
        while view:
            count = os.write(self._fd, view)
            if count == 0:
                raise OSError("the trace file accepted no bytes")
            # A short write would leave a torn row: the rest follows in the next write.
            view = view[count:]

    def _fail(self, error: OSError) -> None:
        self._failed += 1
        if self._first_error is None:
            self._first_error = error.strerror or str(error)
        # End a torn row, so the next one stays whole (a reader skips blank lines).
        with contextlib.suppress(OSError):
            os.write(self._fd, b"\n")

    def counts(self) -> ExportCounts:
        with self._lock:
            return ExportCounts(self._written, self._failed, self._first_error)

    def shutdown(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                os.fsync(self._fd)
            except OSError as error:
                self._failed += 1
                if self._first_error is None:
                    self._first_error = f"fsync: {error.strerror or error}"
            finally:
                os.close(self._fd)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class ChosenIds(RandomIdGenerator):
    """Random ids, except the next trace and span id once ``choose`` named them (a root whose
    ids the flow derived, ``SpanStart.ids``)."""

    def __init__(self) -> None:
        self._trace_id: int | None = None
        self._span_id: int | None = None

    def choose(self, trace_id: int, span_id: int) -> None:
        self._trace_id, self._span_id = trace_id, span_id

    def generate_trace_id(self) -> int:
        chosen, self._trace_id = self._trace_id, None
        return chosen if chosen is not None else super().generate_trace_id()

    def generate_span_id(self) -> int:
        chosen, self._span_id = self._span_id, None
        return chosen if chosen is not None else super().generate_span_id()


class OtelTracer:
    """The ``Tracer`` port over one ``TracerProvider`` exporting to one trace file."""

    def __init__(self, fd: int) -> None:
        self._exporter = JsonlSpanExporter(fd)
        self._ids = ChosenIds()
        # Held around each start, so ids chosen for one span are never drawn by another.
        self._id_lock = threading.Lock()
        self._provider = TracerProvider(
            resource=_RESOURCE, sampler=ALWAYS_ON, span_limits=_LIMITS, id_generator=self._ids
        )
        self._provider.add_span_processor(SimpleSpanProcessor(self._exporter))
        self._tracer = self._provider.get_tracer("pi-squad.flows")
        self._lock = threading.Lock()
        self._spans: dict[str, Span] = {}

    def start_span(self, start: SpanStart) -> SpanRef:
        with self._lock:
            parent = start.parent
            parent_span = self._spans.get(parent.span_id) if parent is not None else None
            linked = [self._spans[ref.span_id] for ref in start.links if ref.span_id in self._spans]
        # An explicit context: a root never inherits whatever span is current in this thread.
        context = trace.set_span_in_context(parent_span) if parent_span is not None else Context()
        with self._id_lock:
            if start.ids is not None and parent_span is None:
                self._ids.choose(int(start.ids.trace_id, 16), int(start.ids.span_id, 16))
            span = self._tracer.start_span(
                start.name,
                context=context,
                links=[Link(other.get_span_context()) for other in linked],
                attributes=_plain(start.attributes),
                start_time=start.start_ns,
            )
        found = span.get_span_context()
        ref = SpanRef(f"{found.trace_id:032x}", f"{found.span_id:016x}")
        with self._lock:
            self._spans[ref.span_id] = span
        return ref

    def end_span(self, span: SpanRef, end: SpanEnd) -> None:
        with self._lock:
            found = self._spans[span.span_id]
        found.set_attributes(_plain(end.attributes))
        found.set_status(
            Status(StatusCode.ERROR, end.error) if end.error else Status(StatusCode.OK)
        )
        found.end(end_time=end.end_ns)

    def counts(self) -> ExportCounts:
        return self._exporter.counts()

    def close(self) -> ExportCounts:
        self._provider.shutdown()
        return self._exporter.counts()


def _plain(attributes: Mapping[str, AttributeValue]) -> dict[str, Any]:
    """The SDK's ``Attributes``: sequences as tuples (immutable, as the SDK keeps them)."""
    return {
        key: value if isinstance(value, str | bool | int | float) else tuple(value)
        for key, value in attributes.items()
    }


class OtelTraceSinks:
    """``TraceSinks``: opens the trace file (see the module's writing policy).

    ``squad_root``: pi-squad's own records (squads, flows, the evidence children are graded
    on) are never a trace's target, however the path spells it: the trace file's directory is
    resolved (symlinks included) and refused when it lies inside the resolved squad root."""

    def __init__(self, squad_root: str | None = None) -> None:
        self._squad_root = squad_root

    def open(self, path: str) -> OtelTracer:
        if self._squad_root is not None and _inside(path, self._squad_root):
            raise TraceUnwritable("it is inside the squad root, which holds pi-squad's records")
        try:
            fd = os.open(path, _FLAGS, 0o600)
        except OSError as error:
            reason = "is a symbolic link" if error.errno == errno.ELOOP else error.strerror
            raise TraceUnwritable(f"cannot open it for appending: {reason or error}") from None
        try:
            mode = os.fstat(fd).st_mode
        except OSError as error:
            os.close(fd)
            raise TraceUnwritable(f"cannot inspect it: {error.strerror or error}") from None
        if not stat.S_ISREG(mode):
            os.close(fd)
            raise TraceUnwritable("it is not a regular file")
        return OtelTracer(fd)


def _inside(path: str, root: str) -> bool:
    directory = os.path.realpath(os.path.dirname(path))
    resolved = os.path.realpath(root)
    return directory == resolved or directory.startswith(resolved.rstrip(os.sep) + os.sep)
