"""Which failed attempts the host retries (seed §7, §8: "retry only a classified failure";
issue 18 item 5: "inside the original deadline").

Two pure steps. ``classify_failure`` says whether a failure is *transient*: a provider error
whose message names load, a rate limit, a 5xx status or a broken transport, or a worker
process that died before its first model response; everything else (a refusal, a quota, a bad
request, an abort, a limit, the deadline, a model fallback, a lost host, an unreadable error)
is *permanent*. ``retry_decision`` then says whether a transient failure is retried now: only
while the job's retry count, its remaining model requests and its original deadline allow one.
Nothing here extends a deadline or grants a request; the caller applies the decision.
"""

from __future__ import annotations

import enum
import re

import attrs


class FailureKind(enum.StrEnum):
    """What ended a failed attempt, as the worker runtime observed it."""

    PROVIDER_ERROR = "provider_error"  # Pi's assistant message stopped with ``error``
    EXITED = "exited"  # the worker process ended before it settled
    START_FAILED = "start_failed"  # Pi could not be started (the runtime's own retry included)
    ABORTED = "aborted"  # Pi's message stopped with ``aborted``, or the host stopped it
    REQUEST_LIMIT = "request_limit"
    DEADLINE = "deadline"
    MODEL_FALLBACK = "model_fallback"
    HOST_LOST = "host_lost"  # the process that ran the worker is gone (recovery)
    OTHER = "other"


class FailureClass(enum.StrEnum):
    TRANSIENT = "transient"
    PERMANENT = "permanent"


# Provider text that means "do not try again": account limits, credentials, the request
# itself. Checked first, so "429 insufficient_quota" is permanent.
_PERMANENT = re.compile(
    r"insufficient.?quota|quota.?exceeded|out of budget|billing|usage limit|available balance"
    r"|invalid.?api.?key|unauthori[sz]ed|forbidden|permission|authentication"
    r"|context.?length|too many tokens|prompt is too long|maximum context"
    r"|\b(400|401|402|403|404|413|422)\b",
    re.IGNORECASE,
)
# Provider text that means load or a broken transport: another attempt may succeed.
_TRANSIENT = re.compile(
    r"overloaded|rate.?limit|too many requests|\b(429|500|502|503|504|524|529)\b"
    r"|service.?unavailable|server.?error|internal.?error|bad gateway|gateway.?timeout"
    r"|network.?error|connection.?(error|reset|refused|lost|closed)|econnreset|econnrefused"
    r"|socket hang up|fetch failed|other side closed|upstream.?connect|reset before headers"
    r"|timed? ?out|stream ended|ended without",
    re.IGNORECASE,
)


@attrs.frozen
class Classification:
    failure_class: FailureClass
    # Why, in one sentence (the receipt shows it).
    reason: str
    # The failed attempt may have reached the provider: a retry can bill the work twice
    # (seed §7: "label it accordingly").
    possible_duplicate_billing: bool


def classify_failure(
    kind: FailureKind, *, error_message: str | None, responses: int
) -> Classification:
    """``responses``: model responses the attempt received before it failed (a message that
    stopped with ``error`` or ``aborted`` is not a response)."""
    if kind is FailureKind.PROVIDER_ERROR:
        text = error_message or ""
        if not text:
            return _permanent("the provider error has no message to classify")
        if _PERMANENT.search(text):
            return _permanent("the provider refused the request (not load or transport)")
        if _TRANSIENT.search(text):
            return Classification(
                FailureClass.TRANSIENT,
                "the provider reported load, a rate limit, a 5xx status or a transport failure",
                possible_duplicate_billing=True,
            )
        return _permanent("the provider error is not one the host classifies as transient")
    if kind is FailureKind.EXITED:
        if responses == 0:
            return Classification(
                FailureClass.TRANSIENT,
                "the worker process died before its first model response",
                # Its first request may have been sent before it died.
                possible_duplicate_billing=True,
            )
        return _permanent("the worker process died after it had model responses")
    return _permanent(f"{kind} is never retried")


def _permanent(reason: str) -> Classification:
    return Classification(FailureClass.PERMANENT, reason, possible_duplicate_billing=False)


# At most this many host retries per job's chain of attempts.
MAX_TRANSIENT_RETRIES = 2
# A retry waits this long first, doubled for each retry before it (provider backoff: Pi
# 0.80.10 hands the host no Retry-After, so the wait is fixed).
RETRY_BACKOFF_MS = 1_000
# A retry needs time for Pi to start (about a second) and to answer.
RETRY_MIN_REMAINING_MS = 10_000


class RetryRefusal(enum.StrEnum):
    PERMANENT = "permanent"
    RETRIES = "retries"
    REQUESTS = "requests"
    DEADLINE = "deadline"


@attrs.frozen
class RetryDecision:
    retry: bool
    refusal: RetryRefusal | None
    # What the receipt says: the retry, or why there is none.
    reason: str
    delay_ms: int = 0


def retry_decision(
    classification: Classification,
    *,
    retries_so_far: int,
    requests_left: int,
    now_ms: int,
    deadline_at_ms: int,
) -> RetryDecision:
    """A transient failure is retried only while the job has a retry, a model request and
    time left before its original deadline (the wait included); never otherwise."""
    if classification.failure_class is FailureClass.PERMANENT:
        return RetryDecision(False, RetryRefusal.PERMANENT, "a permanent failure is not retried")
    if retries_so_far >= MAX_TRANSIENT_RETRIES:
        return RetryDecision(
            False,
            RetryRefusal.RETRIES,
            f"not retried: the job's {MAX_TRANSIENT_RETRIES} retries are used",
        )
    if requests_left < 1:
        return RetryDecision(
            False,
            RetryRefusal.REQUESTS,
            "not retried: the job's model-request limit has no request left for a retry",
        )
    delay = RETRY_BACKOFF_MS * 2**retries_so_far
    remaining = deadline_at_ms - now_ms
    if remaining < delay + RETRY_MIN_REMAINING_MS:
        return RetryDecision(
            False,
            RetryRefusal.DEADLINE,
            f"not retried: the job deadline leaves {max(remaining, 0)} ms and a retry needs "
            f"{delay + RETRY_MIN_REMAINING_MS} ms (the deadline is never extended)",
        )
    return RetryDecision(True, None, f"retried after {delay} ms", delay_ms=delay)
