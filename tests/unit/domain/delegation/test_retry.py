"""The retry classifier and decision (domain/delegation/retry.py), table-driven: only a
classified transient failure is retried, and only inside the job's retries, requests and
original deadline."""

from __future__ import annotations

import pytest

from domain.delegation.retry import (
    MAX_TRANSIENT_RETRIES,
    RETRY_BACKOFF_MS,
    RETRY_MIN_REMAINING_MS,
    Classification,
    FailureClass,
    FailureKind,
    RetryRefusal,
    classify_failure,
    retry_decision,
)

T, P = FailureClass.TRANSIENT, FailureClass.PERMANENT

CLASSIFICATION_TABLE = [
    # kind, Pi's errorMessage, responses before the failure, expected class
    (FailureKind.PROVIDER_ERROR, "429 Too Many Requests", 0, T),
    (FailureKind.PROVIDER_ERROR, "Rate limit reached for requests", 3, T),
    (FailureKind.PROVIDER_ERROR, "529 Overloaded", 0, T),
    (FailureKind.PROVIDER_ERROR, "500 policy failed: RuntimeError('x')", 0, T),
    (FailureKind.PROVIDER_ERROR, "502 Bad Gateway", 1, T),
    (FailureKind.PROVIDER_ERROR, "503 Service Unavailable", 0, T),
    (FailureKind.PROVIDER_ERROR, "Connection error.", 0, T),
    (FailureKind.PROVIDER_ERROR, "read ECONNRESET", 0, T),
    (FailureKind.PROVIDER_ERROR, "socket hang up", 0, T),
    (FailureKind.PROVIDER_ERROR, "fetch failed", 0, T),
    (FailureKind.PROVIDER_ERROR, "Request timed out.", 0, T),
    (FailureKind.PROVIDER_ERROR, "Internal server error", 0, T),
    # Refusals of the request or the account are never load.
    (FailureKind.PROVIDER_ERROR, "429 You exceeded your current quota: insufficient_quota", 0, P),
    (FailureKind.PROVIDER_ERROR, "400 Bad Request: invalid tool schema", 0, P),
    (FailureKind.PROVIDER_ERROR, "401 Incorrect API key provided", 0, P),
    (FailureKind.PROVIDER_ERROR, "403 Forbidden", 0, P),
    (FailureKind.PROVIDER_ERROR, "This model's maximum context length is 8192 tokens", 0, P),
    (FailureKind.PROVIDER_ERROR, "billing hard limit reached", 0, P),
    (FailureKind.PROVIDER_ERROR, "the model refused", 0, P),  # unclassified: permanent
    (FailureKind.PROVIDER_ERROR, "", 0, P),  # no message: nothing to classify
    (FailureKind.PROVIDER_ERROR, None, 0, P),
    (FailureKind.PROVIDER_ERROR, "code 5000 in field", 0, P),  # a number, not a status
    # A worker that died before its first model response is transient; after, it is not.
    (FailureKind.EXITED, None, 0, T),
    (FailureKind.EXITED, None, 1, P),
    # What the host or the runtime decided is never retried.
    (FailureKind.ABORTED, "503", 0, P),
    (FailureKind.START_FAILED, None, 0, P),
    (FailureKind.REQUEST_LIMIT, None, 0, P),
    (FailureKind.DEADLINE, None, 0, P),
    (FailureKind.MODEL_FALLBACK, None, 0, P),
    (FailureKind.HOST_LOST, None, 0, P),
    (FailureKind.OTHER, "503", 0, P),
]


@pytest.mark.parametrize(("kind", "message", "responses", "expected"), CLASSIFICATION_TABLE)
def test_the_classification_table(
    kind: FailureKind, message: str | None, responses: int, expected: FailureClass
) -> None:
    found = classify_failure(kind, error_message=message, responses=responses)
    assert found.failure_class is expected, found.reason
    # A transient failure may have reached the provider: its retry is labelled.
    assert found.possible_duplicate_billing is (expected is T)


TRANSIENT = classify_failure(FailureKind.PROVIDER_ERROR, error_message="503", responses=0)
PERMANENT = classify_failure(FailureKind.PROVIDER_ERROR, error_message="400", responses=0)
ENOUGH = RETRY_BACKOFF_MS * 2**MAX_TRANSIENT_RETRIES + RETRY_MIN_REMAINING_MS

DECISION_TABLE = [
    # classification, retries so far, requests left, ms to the deadline, refusal (None: retry)
    (TRANSIENT, 0, 1, ENOUGH, None),
    (TRANSIENT, 1, 5, ENOUGH, None),
    (TRANSIENT, MAX_TRANSIENT_RETRIES, 5, ENOUGH, RetryRefusal.RETRIES),
    (TRANSIENT, 0, 0, ENOUGH, RetryRefusal.REQUESTS),
    (TRANSIENT, 0, 5, RETRY_BACKOFF_MS + RETRY_MIN_REMAINING_MS - 1, RetryRefusal.DEADLINE),
    (TRANSIENT, 0, 5, RETRY_BACKOFF_MS + RETRY_MIN_REMAINING_MS, None),
    (TRANSIENT, 1, 5, RETRY_BACKOFF_MS + RETRY_MIN_REMAINING_MS, RetryRefusal.DEADLINE),
    (TRANSIENT, 0, 5, -5, RetryRefusal.DEADLINE),
    (PERMANENT, 0, 5, ENOUGH, RetryRefusal.PERMANENT),
]


@pytest.mark.parametrize(("found", "retries", "left", "remaining", "refusal"), DECISION_TABLE)
def test_the_decision_table(
    found: Classification, retries: int, left: int, remaining: int, refusal: RetryRefusal | None
) -> None:
    decision = retry_decision(
        found,
        retries_so_far=retries,
        requests_left=left,
        now_ms=1_000,
        deadline_at_ms=1_000 + remaining,
    )
    assert decision.refusal is refusal
    assert decision.retry is (refusal is None)
    if decision.retry:
        # The backoff doubles per retry, and the wait plus a minimal run fits the deadline.
        assert decision.delay_ms == RETRY_BACKOFF_MS * 2**retries
        assert decision.delay_ms + RETRY_MIN_REMAINING_MS <= remaining
    else:
        assert decision.delay_ms == 0


def test_a_deadline_refusal_names_the_deadline() -> None:
    decision = retry_decision(
        TRANSIENT, retries_so_far=0, requests_left=3, now_ms=0, deadline_at_ms=4_000
    )
    assert "deadline leaves 4000 ms" in decision.reason
    assert "never extended" in decision.reason
