"""The grant's document: what a policy file holds and what ``policyGeneration`` digests. Each
section is read and written field by field under camelCase keys."""

from __future__ import annotations

from domain.delegation.policy import JobGrant, ModelGrant, SessionGrant, grant_from_document

DOCUMENT = {
    "modes": ["review"],
    "sourceRoots": ["/work"],
    "maxSourceBytes": 4096,
    "maxSources": 3,
    "job": {"maxRequests": 2, "deadlineMs": 1000, "maxOutputBytes": 512, "maxToolCalls": 9},
    "batch": {"maxJobs": 1, "maxRequests": 5},
    "session": {
        "allowanceRequests": 7,
        "maxActiveJobs": 1,
        "maxBatches": 4,
        "retentionMs": 60_000,
        "maxIdempotencyKeys": 8,
    },
    "model": {"provider": "anthropic", "model": "claude", "thinking": "low"},
}


def test_each_section_field_is_read_from_its_camel_case_key() -> None:
    grant = grant_from_document(DOCUMENT)
    assert grant.job.max_tool_calls == 9
    assert grant.batch.max_jobs == 1
    assert grant.session.max_idempotency_keys == 8
    assert grant.session.retention_ms == 60_000
    assert grant.model.thinking == "low"


def test_a_grant_writes_back_the_document_it_was_read_from() -> None:
    assert grant_from_document(DOCUMENT).document() == DOCUMENT


def test_a_field_a_section_leaves_out_keeps_its_default() -> None:
    grant = grant_from_document({"job": {"maxRequests": 3}, "session": "not an object"})
    assert grant.job == JobGrant(max_requests=3)
    assert grant.session == SessionGrant()
    assert grant.model == ModelGrant()
