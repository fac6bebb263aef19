"""The closed request (seed §1-§2): versions, host-owned fields, unknown fields, bounds."""

from __future__ import annotations

from typing import Any

import pytest

from domain.delegation.errors import DelegationError
from domain.delegation.request import HOST_OWNED, FollowUpRequest, RunRequest, parse_request
from tests.unit.application.delegation.support import job, run_request

BINDING = {
    "batchId": "b-0000000000000001",
    "jobId": "j-0000000000000002",
    "attemptId": "a-0000000000000003",
    "packetDigest": "0" * 64,
    "resultRevision": 1,
    "taskGeneration": 0,
}


def code_of(document: Any) -> str:
    with pytest.raises(DelegationError) as refused:
        parse_request(document)
    return str(refused.value.code)


def test_a_valid_run_is_structured() -> None:
    request = parse_request(run_request(job(decisions=["keep the API"])))
    assert isinstance(request, RunRequest)
    assert request.jobs[0].decisions == ("keep the API",)
    assert request.limits.max_requests == 4


@pytest.mark.parametrize("version", [0, 2, "1", 1.0, True, None])
def test_unsupported_versions_are_refused(version: Any) -> None:
    assert code_of({**run_request(), "version": version}) == "DELEGATE_VERSION_UNSUPPORTED"


def test_a_missing_version_is_refused() -> None:
    document = run_request()
    del document["version"]
    assert code_of(document) == "DELEGATE_VERSION_UNSUPPORTED"


@pytest.mark.parametrize("field", sorted(HOST_OWNED))
def test_every_host_owned_field_is_refused_at_the_top_of_a_run(field: str) -> None:
    assert code_of({**run_request(), field: "forged"}) == "DELEGATE_FORGED_FIELD"


@pytest.mark.parametrize("field", sorted(HOST_OWNED))
def test_every_host_owned_field_is_refused_in_a_job_proposal(field: str) -> None:
    proposal = job()
    proposal[field] = 1
    assert code_of(run_request(proposal)) == "DELEGATE_FORGED_FIELD"


def test_binding_fields_are_inputs_of_follow_up_but_others_stay_forged() -> None:
    document = {
        "version": 1,
        "op": "follow_up",
        **BINDING,
        "idempotencyKey": "k",
        "addresses": "context_gap",
        "correction": "the callers are in src/b.py",
    }
    assert isinstance(parse_request(document), FollowUpRequest)
    assert code_of({**document, "policyGeneration": 3}) == "DELEGATE_FORGED_FIELD"
    assert code_of({**document, "modelRoute": {}}) == "DELEGATE_FORGED_FIELD"


@pytest.mark.parametrize(
    "document",
    [
        {**run_request(), "extra": 1},
        run_request(job(tools=["bash"])),
        {"version": 1, "op": "status", "verbose": True},
        {"version": 1, "op": "collect", "batchId": BINDING["batchId"], "waitMs": 30_001},
        {**run_request(), "objective": "x" * 2001},
        run_request(*[job(f"k{i}") for i in range(9)]),
        run_request(job(mode="implement")),
        {**run_request(), "limits": {"maxRequests": 0, "deadlineMs": 60_000}},
        {"version": 1, "op": "delegate"},
        [],
    ],
)
def test_unknown_fields_bounds_and_shapes_are_refused(document: Any) -> None:
    assert code_of(document) == "DELEGATE_INVALID"


def test_messages_never_quote_the_request() -> None:
    with pytest.raises(DelegationError) as refused:
        parse_request({**run_request(), "secret-looking-key": "s3cr3t"})
    assert "s3cr3t" not in refused.value.message
    assert "secret-looking-key" not in refused.value.message
