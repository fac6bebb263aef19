"""Reading a trace file back: what ``pi-squad trace report FILE`` and the Pi ``/flows report
FILE`` command call (``read_trace_report``); the summary itself is the pure
``domain.flows.trace_report``."""

from __future__ import annotations

import posixpath

from application.ports import FileSystem, StableReadError
from domain.errors import ErrorCode
from domain.flows.errors import FlowError, refuse
from domain.flows.trace_report import TraceReport, report

# A trace of the largest flows is a few hundred KiB; far above that is not one flow's trace.
MAX_TRACE_BYTES = 64 * 1024 * 1024


def read_trace_report(fs: FileSystem, path: str, *, cwd: str) -> TraceReport:
    """The report of the trace at ``path`` (relative to ``cwd``). A file that cannot be read
    is ``TRACE_INCOMPLETE``: there is no evidence to report."""
    where = posixpath.normpath(posixpath.join(cwd, path))
    try:
        data = fs.read_small(where, MAX_TRACE_BYTES)
    except StableReadError as error:
        raise _unreadable(f"{error.failure.value}: {error.detail}") from None
    except OSError as error:
        raise _unreadable(error.strerror or type(error).__name__) from None
    return report(data.decode("utf-8", "replace"))


def _unreadable(reason: str) -> FlowError:
    return refuse(
        ErrorCode.TRACE_INCOMPLETE,
        "FILE",
        f"the trace file cannot be read: {reason}",
        measured="unreadable",
        allowed=f"a regular trace file of at most {MAX_TRACE_BYTES} bytes",
    )
