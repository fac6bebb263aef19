"""When the dispatcher stops a running flow child: at ``timeoutMs``, or sooner, when the child's
model reported a terminal provider error and then stalled (pi-flows' ``PI_FLOWS_ERROR_GRACE_MS``).

A provider error (an assistant message ending ``stopReason: "error"``, or Pi's retries giving
up) starts the grace; Pi working past it (an automatic retry, a compaction, a later assistant
message or tool) ends it. A child still silent when the grace runs out is stopped and its run
fails ``CHILD_PROVIDER_ERROR`` with the provider's message.
"""

from __future__ import annotations

from domain.child_stops import Stop, next_stop
from domain.errors import ErrorCode
from domain.flows.errors import refuse

__all__ = [
    "DEFAULT_ERROR_GRACE_MS",
    "ERROR_GRACE_VARIABLE",
    "Stop",
    "error_grace_ms",
    "next_stop",
    "provider_error_message",
]

ERROR_GRACE_VARIABLE = "PI_FLOWS_ERROR_GRACE_MS"
DEFAULT_ERROR_GRACE_MS = 30_000
# The same bounds as ``timeoutMs``: a second at least, a day at most.
MIN_ERROR_GRACE_MS = 1000
MAX_ERROR_GRACE_MS = 86_400_000
# The provider's message as a run error: long enough for any real one, bounded for the report.
PROVIDER_MESSAGE_CAP = 2000


def error_grace_ms(setting: str) -> int:
    """``PI_FLOWS_ERROR_GRACE_MS`` as given (empty: the default 30 000); any other value than
    a whole number of milliseconds in bounds is refused, naming the variable."""
    raw = setting.strip()
    if not raw:
        return DEFAULT_ERROR_GRACE_MS
    value = int(raw) if raw.isascii() and raw.isdigit() else None
    if value is None or not MIN_ERROR_GRACE_MS <= value <= MAX_ERROR_GRACE_MS:
        raise refuse(
            ErrorCode.FLOW_INVALID,
            f"env.{ERROR_GRACE_VARIABLE}",
            f"{ERROR_GRACE_VARIABLE} must be a whole number of milliseconds "
            f"{MIN_ERROR_GRACE_MS}..{MAX_ERROR_GRACE_MS}",
            measured=raw[:100],
            allowed={"minimum": MIN_ERROR_GRACE_MS, "maximum": MAX_ERROR_GRACE_MS},
        )
    return value


def provider_error_message(message: str) -> str:
    text = message
    if len(text) > PROVIDER_MESSAGE_CAP:
        text = text[:PROVIDER_MESSAGE_CAP] + "…"
    return f"the model's provider reported an error and the child did not recover: {text}"
