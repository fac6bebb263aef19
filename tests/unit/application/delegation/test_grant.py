"""The grant changes only when a person renews it (seed §3: the policy generation is immutable
human policy; §8: only an explicit human change renews an exhausted allowance). A call under
another grant (other flags, an edited policy file) is answered read-only or refused by name;
the host's own bookkeeping goes on under the session's generation; ``renew`` adopts it."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from domain.delegation.errors import DelegationError
from domain.delegation.policy import SessionGrant
from tests.fakes.delegation import ROOT, DelegationWorld, outcome, report
from tests.unit.application.delegation import support
from tests.unit.application.delegation.support import (
    first_item,
    first_lease,
    job,
    run_request,
    started,
    world,
)

STATE = f"{ROOT}/delegation/sessions/s1/state.json"


def state_bytes(w: DelegationWorld) -> bytes:
    return w.fs.read_small(STATE, 1 << 24)


def another_grant(w: DelegationWorld) -> None:
    """What a call without the session's flags (or after a policy file edit) is granted."""
    w.grants.current = attrs.evolve(w.grant, source_roots=())


def refused(host: Any, document: dict[str, Any]) -> DelegationError:
    with pytest.raises(DelegationError) as error:
        host.handle(document)
    return error.value


def test_status_and_collect_under_another_grant_change_nothing() -> None:
    w, host, admitted, _ = support.ready_job()
    running = started(w, host, job("k2"))
    before = state_bytes(w)
    another_grant(w)
    status = host.handle({"version": 1, "op": "status"})
    collected = host.handle({"version": 1, "op": "collect", "batchId": admitted["batchId"]})
    assert state_bytes(w) == before
    assert w.runtime.cancelled == []
    assert status["policyGeneration"] == 1
    assert status["ledger"]["renewals"] == []
    assert [item["receipt"]["hostStatus"] for item in collected["items"]] == ["ready"]
    batch = host.handle({"version": 1, "op": "status", "batchId": running["batchId"]})
    assert [row["state"] for row in batch["jobs"]] == ["running"]


def test_every_request_under_another_grant_is_refused_naming_both_and_the_renew_command() -> None:
    w, host, admitted, item = support.ready_job()
    before = state_bytes(w)
    another_grant(w)
    requests = [
        run_request(job("k2")),
        support.follow_up_request(item, "context_gap"),
        support.resolve_request(item, "discard"),
        {"version": 1, "op": "cancel", "batchId": admitted["batchId"]},
        {"version": 1, "op": "capture", "paths": ["cache.py"]},
    ]
    for request in requests:
        error = refused(host, request)
        assert error.code == "DELEGATE_GRANT_CHANGED", request["op"]
        assert w.grant.digest()[:16] in error.message
        assert w.grants.current.digest()[:16] in error.message
        assert "`pi-squad delegate renew --session s1`" in error.message
    assert state_bytes(w) == before


def test_workers_go_on_under_the_sessions_generation_until_a_person_renews() -> None:
    w = world()
    host = w.host()
    admitted = started(w, host)
    lease = first_lease(w, admitted)
    another_grant(w)
    assert host.authorize_request(lease)
    assert host.authorize_tool(lease, "read_source")[0]
    host.report(lease, outcome(report()))
    assert w.runtime.cancelled == []
    assert first_item(host, admitted["batchId"])["receipt"]["hostStatus"] == "ready"
    assert host.handle({"version": 1, "op": "status"})["policyGeneration"] == 1


def test_an_exhausted_allowance_refuses_and_only_an_explicit_renewal_renews_it() -> None:
    w = world(session=SessionGrant(allowance_requests=6))
    host = w.host()
    lease = first_lease(w, started(w, host))
    assert refused(host, run_request(job("k2"))).code == "DELEGATE_CAPACITY_EXHAUSTED"
    assert host.authorize_request(lease)
    host.report(lease, outcome(report()))
    before = host.handle({"version": 1, "op": "status"})
    assert before["ledger"]["consumed"] == 1
    w.grants.current = attrs.evolve(w.grant, max_sources=199)  # a human edit of the policy file
    assert host.handle({"version": 1, "op": "status"}) == before  # read-only: nothing renewed
    assert refused(host, run_request(job("k2"))).code == "DELEGATE_GRANT_CHANGED"
    renewed = host.renew()
    assert renewed["op"] == "renew"
    assert renewed["policyGeneration"] == before["policyGeneration"] + 1
    assert renewed["ledger"]["consumed"] == 1  # a renewal never erases what was consumed
    assert renewed["ledger"]["free"] == 6
    assert renewed["ledger"]["renewals"] == [{"policyGeneration": 2, "consumedBefore": 1}]
    assert host.handle(run_request(job("k2")))["jobs"][0]["deduplicated"] is False


def test_a_read_creates_no_session_and_the_first_request_sets_its_grant() -> None:
    w = world()
    host = w.host()
    assert host.handle({"version": 1, "op": "status"})["policyGeneration"] == 1
    assert w.store.snapshot("s1") is None
    another_grant(w)
    host.handle(run_request())  # creates the session under the grant it was given
    w.grants.current = w.grant
    assert refused(host, run_request(job("k2"))).code == "DELEGATE_GRANT_CHANGED"


def test_a_delegated_worker_cannot_renew() -> None:
    host = world().host(worker_context=True)
    with pytest.raises(DelegationError) as error:
        host.renew()
    assert error.value.code == "DELEGATE_POLICY_DENIED"
