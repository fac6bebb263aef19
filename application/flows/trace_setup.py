"""Setting a flow call's trace up: which file (the call's ``traceFile``, else
``PI_FLOWS_TRACE_FILE``), whether it could be opened, and the ``traceStrict`` gate
(``TRACE_INCOMPLETE``) before any spawn and after the flow. The spans themselves are
``application.flows.tracing.FlowTrace``'s.
"""

from __future__ import annotations

import posixpath
import threading

import attrs

from application.flows.tracing import FlowTrace
from application.ports import (
    Clock,
    ExportCounts,
    SpanEnd,
    SpanRef,
    SpanStart,
    Tracer,
    TraceSinks,
    TraceUnwritable,
)
from domain.errors import ErrorCode
from domain.flows import trace_spans as ts
from domain.flows.call import FlowCall
from domain.flows.errors import FlowError, refuse

TRACE_FILE_VARIABLE = "PI_FLOWS_TRACE_FILE"
# What every trace file's name ends with (the call's schema checks ``traceFile`` the same way).
TRACE_SUFFIX = ".jsonl"


@attrs.frozen
class TraceDefaults:
    """What the environment says (``PI_FLOWS_TRACE_FILE``, ``PI_FLOWS_TRACE_STRICT``): the
    entrypoint reads it, the call's own fields come first."""

    file: str | None = None
    strict: bool = False


NO_TRACE_DEFAULTS = TraceDefaults()


class _Unwritten:
    """The tracer of a trace file that could not be opened: every span is a failed export."""

    def __init__(self, reason: str) -> None:
        self._reason = reason
        self._lock = threading.Lock()
        self._started = 0
        self._failed = 0

    def start_span(self, start: SpanStart) -> SpanRef:
        with self._lock:
            self._started += 1
            return SpanRef("0" * 32, f"{self._started:016x}")

    def end_span(self, span: SpanRef, end: SpanEnd) -> None:
        with self._lock:
            self._failed += 1

    def counts(self) -> ExportCounts:
        with self._lock:
            return ExportCounts(0, self._failed, self._reason)

    def close(self) -> ExportCounts:
        return self.counts()


def trace_path(call: FlowCall, defaults: TraceDefaults, base_cwd: str) -> str | None:
    """The absolute trace file: the call's ``traceFile``, else ``PI_FLOWS_TRACE_FILE``; a
    relative one resolves against the call's working directory."""
    chosen = call.trace_file if call.trace_file is not None else defaults.file
    if chosen is None:
        return None
    return posixpath.normpath(posixpath.join(base_cwd, call.cwd or "", chosen))


def open_trace(
    call: FlowCall,
    *,
    sinks: TraceSinks | None,
    defaults: TraceDefaults,
    base_cwd: str,
    clock: Clock,
    invocation_id: str,
    home: str | None,
) -> FlowTrace | None:
    """The call's trace, or ``None`` when no trace file was asked for. A file that cannot be
    opened still gives a trace (every span a failed export): the flow runs, its health says
    ``missing``; ``strict_gate`` refuses it under ``traceStrict``."""
    path = trace_path(call, defaults, base_cwd)
    if path is None:
        return None
    unwritable: str | None = None
    tracer: Tracer
    if not path.endswith(TRACE_SUFFIX):
        # Only the environment's path can get here: the call's schema demands the suffix.
        unwritable = f"{TRACE_FILE_VARIABLE} must name a {TRACE_SUFFIX} file"
        tracer = _Unwritten(unwritable)
    elif sinks is None:
        unwritable = "no trace exporter in this process"
        tracer = _Unwritten(unwritable)
    else:
        try:
            tracer = sinks.open(path)
        except TraceUnwritable as error:
            unwritable = str(error) or "cannot be opened for appending"
            tracer = _Unwritten(unwritable)
    return FlowTrace(
        tracer,
        call,
        clock,
        invocation_id=invocation_id,
        path=path,
        home=home,
        unwritable=unwritable,
    )


def strict(call: FlowCall, defaults: TraceDefaults) -> bool:
    """``traceStrict`` from the call or the environment: either can turn the gate on."""
    return call.trace_strict or defaults.strict


def strict_gate(trace: FlowTrace | None, home: str | None) -> None:
    """Before any spawn, under ``traceStrict``: a trace that cannot be complete is refused."""
    if trace is None:
        raise refuse(
            ErrorCode.TRACE_INCOMPLETE,
            "$.traceFile",
            f"traceStrict needs a traceFile (or {TRACE_FILE_VARIABLE})",
            measured="absent",
            allowed="a writable file path",
        )
    if trace.unwritable is not None:
        reason, _ = ts.bounded(trace.unwritable, redact_on=True, home=home, cap=512)
        raise refuse(
            ErrorCode.TRACE_INCOMPLETE,
            "$.traceFile",
            f"the trace file cannot be written: {reason}",
            measured="unwritable",
            allowed="a writable file path",
        )


def incomplete(health: ts.TraceHealth) -> FlowError:
    """Under ``traceStrict``, after the flow: the evidence is not complete."""
    return refuse(
        ErrorCode.TRACE_INCOMPLETE,
        "$.traceFile",
        f"trace health {health.health}: {health.observed}/{health.expected} spans written, "
        f"{health.failed_exports} failed exports",
        measured=health.document(),
        allowed={"health": str(ts.Health.RECORDED)},
    )
