"""Delegated workers on real Pi 0.80.10 and the scripted model's ``worker`` policy
(docs/delegation.md, "Workers on real Pi"): what a job returns (results, evidence, usage) and the
limits a worker meets (tools, output ceiling, requests, provider errors). Skipped without the
project runtime."""

from __future__ import annotations

import pytest

from tests.e2e.delegation_world import Delegation, delegation_world  # noqa: F401 - the fixture
from tests.e2e.real_pi import CLI_TIMEOUT_SECONDS

pytestmark = pytest.mark.realpi


def test_a_review_job_returns_a_valid_result_with_evidence_ids(delegation: Delegation) -> None:
    item = delegation.run_to_end("valid")
    receipt, result = item["receipt"], item["result"]
    assert receipt["hostStatus"] == "ready", receipt
    assert receipt["settlement"] == "settled"
    assert result["evidence"][0]["evidenceId"] == "E1"
    assert result["evidence"][0]["quotation"] == "def add(a, b):"
    assert result["coverage"][0]["evidenceIds"] == ["E1"]
    outcomes = receipt["observations"]["toolOutcomes"]
    assert outcomes == [{"tool": "read_source", "allowed": True, "reason": "allowed"}]
    assert receipt["validation"]["references"] == "passed"
    assert receipt["observations"]["stopReason"] == "stop"
    assert "enforcement" in receipt["limits"]


def test_a_worker_cites_a_granted_parent_observation_receipt(delegation: Delegation) -> None:
    """Seed 001 §4 rows 3-4 on real Pi: the parent's observation is a receipt the host issued;
    the worker fetches it through ``cite_receipt`` and names it as evidence; the host judges the
    reference against its table and issues a check receipt for the output it judged."""
    source_id = delegation.capture()
    receipt_id = delegation.observe(source_id)
    job = delegation.run_granted("cite-receipt", source_id, (receipt_id,))
    worker = delegation.work()
    out, err = worker.communicate(timeout=CLI_TIMEOUT_SECONDS)
    assert worker.returncode == 0, out + err
    item = delegation.collect(job["batchId"])["items"][0]
    receipt, result = item["receipt"], item["result"]
    assert receipt["hostStatus"] == "ready", receipt
    assert {"evidenceId": "E2", "receiptId": receipt_id} in result["evidence"]
    outcomes = receipt["observations"]["toolOutcomes"]
    assert [o["tool"] for o in outcomes] == ["cite_receipt", "read_source"]
    assert all(o["allowed"] for o in outcomes)
    kinds = receipt["observations"]["citedEvidenceKinds"]
    assert kinds["parent_observation"] == 1
    assert kinds["snapshot_source"] == 1
    assert receipt["observations"]["hostCheckReceipt"].startswith("chk-")


def test_usage_totals_equal_the_sum_of_the_per_turn_usage(delegation: Delegation) -> None:
    item = delegation.run_to_end("valid")
    usage = item["receipt"]["usage"]
    turns = usage["perRequest"]
    # Two model turns: the read_source call, then the answer; each one reported and admitted.
    assert len(turns) == 2 == usage["reportedCalls"] == usage["requests"]
    assert len(delegation.model.exchanges()) == 2
    for key in ("input", "output"):
        assert all(isinstance(t[key], int) for t in turns)
        assert all(t[key] > 0 for t in turns)
        assert usage[key] == sum(t[key] for t in turns)


def test_a_result_citing_a_nonexistent_source_is_invalid(delegation: Delegation) -> None:
    item = delegation.run_to_end("unknown-source")
    assert item["receipt"]["hostStatus"] == "invalid"
    assert item["receipt"]["correctable"] is False
    assert "src-000" in item["receipt"]["problem"]


def test_a_result_quoting_a_wrong_range_is_invalid(delegation: Delegation) -> None:
    item = delegation.run_to_end("wrong-range")
    assert item["receipt"]["hostStatus"] == "invalid"
    assert "line range is impossible" in item["receipt"]["problem"]


def test_bash_and_delegate_are_refused_and_recorded_as_denied(delegation: Delegation) -> None:
    item = delegation.run_to_end("denied-tools")
    outcomes = item["receipt"]["observations"]["toolOutcomes"]
    denied = {o["tool"]: o for o in outcomes if not o["allowed"]}
    assert set(denied) == {"bash", "delegate"}
    assert denied["bash"]["reason"] == "tool bash is not granted"
    assert not (delegation.project / "escaped").exists()
    # The worker went on with its broker and still produced a checked result.
    assert item["receipt"]["hostStatus"] == "ready"


def test_output_over_the_ceiling_is_aborted_invalid_and_recorded(delegation: Delegation) -> None:
    item = delegation.run_to_end("overflow", maxOutputBytes=4096)
    receipt = item["receipt"]
    assert receipt["hostStatus"] == "invalid"
    assert item["result"] is None
    assert receipt["responseLimits"]["overflow"] is True
    received = receipt["responseLimits"]["rawBytesReceived"]
    # Reading stopped at the chunk that crossed the ceiling (the model streams 24-character
    # pieces of a 40 kB answer), not after the whole message arrived.
    assert 4096 < received < 4096 + 1024
    assert receipt["responseLimits"]["parsedBytesRetained"] == 0
    assert receipt["validation"]["truncation"] == "overflow"


def test_the_request_limit_stops_the_worker_before_its_next_turn(
    delegation: Delegation,
) -> None:
    item = delegation.run_to_end("slow", maxRequests=3)
    receipt = item["receipt"]
    assert receipt["hostStatus"] == "failed"
    assert receipt["problem"] == "the model-request limit is reached"
    # Three admitted and the refused fourth: Pi may send it before the kill lands (the
    # documented window), so the receipt counts it; never a fifth.
    assert receipt["usage"]["requests"] == 4
    # The third turn's search was blocked before it ran.
    allowed = [o for o in receipt["observations"]["toolOutcomes"] if o["allowed"]]
    assert len(allowed) == 2
    assert len(delegation.model.exchanges()) <= 4


def test_a_permanent_provider_error_is_a_failure_and_nobody_retries_it(
    delegation: Delegation,
) -> None:
    item = delegation.run_to_end("provider-refusal")
    receipt = item["receipt"]
    assert receipt["hostStatus"] == "failed"
    assert receipt["observations"]["stopReason"] == "error"
    # The worker's settings turn Pi's automatic retries off: one request, no retry seen.
    assert receipt["observations"]["providerRetries"] == 0
    # A 400 is not load or transport: the host does not retry it either.
    failure = receipt["observations"]["failure"]
    assert (failure["kind"], failure["classification"]) == ("provider_error", "permanent")
    assert "400" in failure["errorMessage"]
    assert receipt["usage"]["requests"] == 1
    assert len(receipt["attempts"]) == 1
    assert delegation.model.exchanges() == []  # (refused requests are not exchanges)
    assert item["result"] is None


def test_a_transient_provider_error_is_retried_once_by_the_host_and_succeeds(
    delegation: Delegation,
) -> None:
    item = delegation.run_to_end("transient-once")
    receipt = item["receipt"]
    assert receipt["hostStatus"] == "ready", receipt
    attempts = receipt["attempts"]
    assert [a["hostStatus"] for a in attempts] == ["failed", "ready"]
    assert attempts[0]["stopReason"] == "error"
    assert attempts[0]["failure"]["classification"] == "transient"
    assert "500" in attempts[0]["failure"]["errorMessage"]
    assert attempts[1]["possibleDuplicateBilling"] is True
    # A fresh worker: the retry read its source again (its own first turn).
    assert receipt["observations"]["toolOutcomes"] == [
        {"tool": "read_source", "allowed": True, "reason": "allowed"}
    ]
    # One failed request, then the retry's two answered: each admitted, all in the totals.
    usage = receipt["usage"]
    assert usage["requests"] == 3
    assert len(delegation.model.exchanges()) == 2
    assert [a["requests"] for a in attempts] == [1, 2]
    assert usage["input"] == sum(t["input"] or 0 for t in usage["perRequest"])


def test_a_persistent_transient_error_is_retried_at_most_twice(delegation: Delegation) -> None:
    item = delegation.run_to_end("provider-error")
    receipt = item["receipt"]
    assert receipt["hostStatus"] == "failed"
    assert receipt["observations"]["providerRetries"] == 0  # Pi's own retries stay off
    assert [a["requests"] for a in receipt["attempts"]] == [1, 1, 1]
    assert "retries are used" in receipt["observations"]["failure"]["retry"]
    assert delegation.model.exchanges() == []  # all three failed (500)
    assert item["result"] is None
