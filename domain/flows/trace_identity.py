"""A flow's trace id and root span id derived from its ``traceContext`` and mode (flows-brief
§7), so an evaluation that runs the same case, trial and arm again writes the same ids and the
two traces correlate. Without a ``traceContext`` the ids stay the exporter's own (random).

The derivation: SHA-256 of a purpose label, a NUL byte, and the canonical JSON
(``domain.flows.canonical``) of ``{"mode": ..., "traceContext": {...}}`` with every field the
call gave (``attempt`` included: an explicit retry is its own trace). The trace id is the first
32 hex digits of the ``trace`` digest, the root span id the first 16 of the ``root-span`` one.
An all-zero id is invalid in W3C trace context: it becomes ``...1`` (practically never).
"""

from __future__ import annotations

import hashlib

from domain.flows.call import TraceContext
from domain.flows.canonical import canonical_bytes

_TRACE_LABEL = b"pi-squad.flow.trace-id"
_ROOT_LABEL = b"pi-squad.flow.root-span-id"


def _digest(label: bytes, payload: bytes, digits: int) -> str:
    found = hashlib.sha256(label + b"\0" + payload).hexdigest()[:digits]
    return found if found.strip("0") else "0" * (digits - 1) + "1"


def derived_ids(context: TraceContext | None, mode: str) -> tuple[str, str] | None:
    """``(trace id, root span id)`` as lowercase hex, or ``None`` without a context."""
    if context is None:
        return None
    fields = {
        "runId": context.run_id,
        "caseId": context.case_id,
        "trialId": context.trial_id,
        "trialIndex": context.trial_index,
        "arm": context.arm,
        "attempt": context.attempt,
    }
    payload = canonical_bytes(
        {"mode": mode, "traceContext": {k: v for k, v in fields.items() if v is not None}}
    )
    return _digest(_TRACE_LABEL, payload, 32), _digest(_ROOT_LABEL, payload, 16)
