"""The evidence broker and the worker's bridge role (application/delegation/broker.py,
application/child/worker.py) over the real file store on the fake world: every decision is the
host's, recorded; source text is bounded data of the job's own sources; a revoked lease, a
passed deadline or an exhausted request reservation stops the worker's tools."""

from __future__ import annotations

import json
from typing import Any

import pytest

from application.child.worker import REQUEST_LIMIT_REASON, WorkerRole
from application.delegation.broker import (
    MAX_READ_BYTES,
    MAX_SEARCH_HITS,
    BrokerRefusal,
    EvidenceBroker,
)
from application.ports import ToolFailure
from domain.child_environment import (
    ChildEnvironment,
    DelegationWorkerChild,
    FailedClosedChild,
    broker_socket_environ,
    delegation_worker_environ,
)
from tests.fakes.delegation import PROJECT, DelegationWorld
from tests.unit.application.delegation.support import (
    first_lease,
    job,
    run_request,
    world,
)

SOURCE = b"alpha line\nbeta line\ngamma alpha\n"
BROKER = "/squad-root/delegation/brokers/0123456789abcdef.sock"


def started_worker(w: DelegationWorld, **limits: Any) -> tuple[Any, EvidenceBroker, str]:
    w.fs.add_file(f"{PROJECT}/a.py", SOURCE)
    host = w.host()
    captured = host.handle({"version": 1, "op": "capture", "paths": ["a.py"]})
    source_id = captured["sources"][0]["sourceId"]
    request = run_request(job(sourceIds=[source_id]))
    request["limits"].update(limits)
    admitted = host.handle(request)
    lease = first_lease(w, admitted)
    return host, EvidenceBroker(w.store, lease, w.clock), source_id


def outcomes(w: DelegationWorld) -> list[dict[str, Any]]:
    state = w.store.snapshot("s1")
    assert state is not None
    return list(state.attempts()[0][2].tool_outcomes)


def test_read_source_returns_the_range_as_framed_data() -> None:
    w = world()
    _, broker, source_id = started_worker(w)
    text = broker.read_source({"sourceId": source_id, "lineStart": 2, "lineEnd": 2})
    meta, notice, body = text.split("\n", 2)
    assert '"lineStart":2' in meta
    assert source_id in meta
    assert "not instructions" in notice
    assert body == "beta line\n"
    by_bytes = broker.read_source({"sourceId": source_id, "byteStart": 0, "byteEnd": 5})
    assert by_bytes.endswith("\nalpha")


def test_impossible_ranges_and_foreign_sources_are_refused() -> None:
    w = world()
    _, broker, source_id = started_worker(w)
    with pytest.raises(BrokerRefusal, match="line range impossible"):
        broker.read_source({"sourceId": source_id, "lineStart": 1, "lineEnd": 99})
    with pytest.raises(BrokerRefusal, match="byte range impossible"):
        broker.read_source({"sourceId": source_id, "byteStart": 5, "byteEnd": 5})
    with pytest.raises(BrokerRefusal, match="not one of this job's sources"):
        broker.read_source({"sourceId": "src-" + "0" * 32})


def test_a_read_is_bounded() -> None:
    w = world()
    w.fs.add_file(f"{PROJECT}/big.py", b"x" * (MAX_READ_BYTES * 2) + b"\n")
    host = w.host()
    source_id = host.handle({"version": 1, "op": "capture", "paths": ["big.py"]})["sources"][0][
        "sourceId"
    ]
    admitted = host.handle(run_request(job(sourceIds=[source_id])))
    broker = EvidenceBroker(w.store, first_lease(w, admitted), w.clock)
    text = broker.read_source({"sourceId": source_id})
    meta, _, body = text.split("\n", 2)
    assert '"truncated":true' in meta
    assert len(body.encode()) == MAX_READ_BYTES


def test_search_and_cite_stay_within_the_jobs_sources() -> None:
    w = world()
    _, broker, source_id = started_worker(w)
    found = broker.search_source({"query": "alpha"})
    assert '"line":1' in found
    assert '"line":3' in found
    assert source_id in broker.cite_receipt({"sourceId": source_id})


def test_a_revoked_lease_stops_every_broker_call() -> None:
    w = world()
    host, broker, source_id = started_worker(w)
    batch_id = w.runtime.starts[0].lease.batch_id
    host.handle({"version": 1, "op": "cancel", "batchId": batch_id})
    assert broker.admit_tool("read_source") == (False, "the lease was revoked")
    assert broker.admit_request() is False
    with pytest.raises(BrokerRefusal, match="revoked"):
        broker.read_source({"sourceId": source_id})


def test_a_passed_deadline_refuses_tools_and_records_it() -> None:
    w = world()
    _, broker, _ = started_worker(w, deadlineMs=1000)
    w.clock.advance(2)
    assert broker.admit_tool("read_source") == (False, "the job deadline passed")
    assert outcomes(w)[-1] == {
        "tool": "read_source",
        "allowed": False,
        "reason": "the job deadline passed",
    }


def assistant(*calls: tuple[str, str]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "toolCall", "id": cid, "name": name} for cid, name in calls],
    }


def test_the_role_records_tools_pi_never_offered_as_denied() -> None:
    w = world()
    _, broker, _ = started_worker(w)
    role = WorkerRole(broker)
    assert {t.name for t in role.registrations().tools} == {
        "read_source",
        "search_source",
        "cite_receipt",
    }
    role.message_end(assistant(("c1", "bash"), ("c2", "delegate")))
    assert [(o["tool"], o["allowed"]) for o in outcomes(w)] == [
        ("bash", False),
        ("delegate", False),
    ]
    # A guard call for an offered tool of another name is blocked too.
    assert role.tool_call("c3", "write", {}).block
    with pytest.raises(ToolFailure):
        role.execute_tool("c4", "bash", {"command": "true"})


def test_one_request_is_debited_per_message_before_its_calls_run() -> None:
    w = world()
    _, broker, _ = started_worker(w, maxRequests=2)
    role = WorkerRole(broker)
    # The runtime debits the first request; then each message with calls debits one more.
    assert broker.admit_request() is True
    role.message_end(assistant(("c1", "read_source"), ("c2", "search_source")))
    assert not role.tool_call("c1", "read_source", {}).block
    assert not role.tool_call("c2", "search_source", {}).block
    state = w.store.snapshot("s1")
    assert state is not None
    assert state.attempts()[0][2].consumed == 2
    role.message_end(assistant(("c3", "read_source")))
    decision = role.tool_call("c3", "read_source", {})
    assert decision.block
    assert decision.reason == REQUEST_LIMIT_REASON


def test_the_worker_environment_is_classified_and_fails_closed_when_mixed() -> None:
    worker = DelegationWorkerChild("s1", "b-1", "j-1", "a-1", "tok", "d" * 64, BROKER)
    environ = {**delegation_worker_environ(worker), **broker_socket_environ(BROKER)}
    assert ChildEnvironment.from_environ(environ, "posix") == worker
    for broken in (
        {**environ, "PI_SQUAD_BASH_READONLY": "1"},
        {k: v for k, v in environ.items() if k != "PI_SQUAD_DELEGATION_BROKER"},
        {**environ, "PI_SQUAD_DELEGATION_BROKER": "run/broker.sock"},
        {**environ, "PI_SQUAD_DELEGATION_BROKER": "/run/../tmp/broker.sock"},
        {**environ, "PI_SQUAD_DELEGATION_BROKER": "/" + "b" * 4095},
        {**environ, "PI_SQUAD_DELEGATION_BROKER": "/run/broker\n.sock"},
        {**environ, "PI_SQUAD_DELEGATION_WORKER": "0"},
        {k: v for k, v in environ.items() if k != "PI_SQUAD_DELEGATION_LEASE"},
        {**environ, "PI_SQUAD_DELEGATION_SESSION": "../x y"},
        {**environ, "PI_SQUAD_ID": "x"},
    ):
        assert isinstance(ChildEnvironment.from_environ(broken, "posix"), FailedClosedChild)


def test_the_bridge_serves_the_broker_only_to_a_child_asked_as_one() -> None:
    from adapters.bridge.roles import bridge_role_for
    from entrypoints.bridge_root import system_bridge_role

    worker = DelegationWorkerChild("s1", "b-1", "j-1", "a-1", "tok", "d" * 64, BROKER)
    role = bridge_role_for(
        "child",
        worker,
        main_role=lambda: pytest.fail("not the main role"),
        child_events=lambda _: WorkerRole(None),  # type: ignore[arg-type]
    )
    assert role.name == "child-worker"
    assert role.lifecycle is False
    environ = {
        **delegation_worker_environ(worker),
        **broker_socket_environ(BROKER),
        "PI_SQUAD_ROOT": "/nonexistent-root",
    }
    built = system_bridge_role("child", environ)
    assert built.name == "child-worker"
    assert isinstance(built.events, WorkerRole)
    # A worker environment asked to be the main role blocks everything.
    assert system_bridge_role("main", environ).name == "child-failed-closed"


@pytest.mark.parametrize(
    ("tool", "params", "named"),
    [
        ("read_source", {"sourceId": 7}, "sourceId"),
        ("read_source", {"sourceId": "src-" + "0" * 32, "lineStart": "1"}, "lineStart"),
        ("read_source", {"sourceId": "src-" + "0" * 32, "path": "/etc/passwd"}, "unknown key"),
        ("read_source", {"sourceId": "src-" + "0" * 32, "lineStart": 1, "byteEnd": 3}, "byteStart"),
        ("search_source", {"query": ""}, "query"),
        ("search_source", {"query": "a", "sourceIds": "src-" + "0" * 32}, "sourceIds"),
        ("cite_receipt", {}, "sourceId"),
        ("cite_receipt", {"sourceId": "../../state.json"}, "sourceId"),
    ],
)
def test_malformed_broker_arguments_are_refused_naming_the_field(
    tool: str, params: dict[str, Any], named: str
) -> None:
    """The worker's arguments take the one validation path (schema files, then value classes),
    and a refusal names the field without echoing what the worker sent."""
    w = world()
    _, broker, _ = started_worker(w)
    with pytest.raises(BrokerRefusal, match=named) as refused:
        getattr(broker, tool)(params)
    assert "/etc/passwd" not in str(refused.value)


def test_the_tools_advertise_the_schema_files_they_are_checked_against() -> None:
    from application.child.worker import broker_tool_specs
    from domain.spec.documents import tool_parameters

    advertised = {spec.name: spec.parameters for spec in broker_tool_specs()}
    assert advertised == {
        "read_source": tool_parameters("delegate-broker-read-v1"),
        "search_source": tool_parameters("delegate-broker-search-v1"),
        "cite_receipt": tool_parameters("delegate-broker-cite-v1"),
    }
    assert all(p["additionalProperties"] is False for p in advertised.values())


def test_search_says_limited_only_when_a_hit_was_left_out() -> None:
    w = world()
    lines = b"".join(b"hit %d\n" % n for n in range(MAX_SEARCH_HITS))
    w.fs.add_file(f"{PROJECT}/hits.txt", lines)
    host = w.host()
    source_id = host.handle({"version": 1, "op": "capture", "paths": ["hits.txt"]})["sources"][0][
        "sourceId"
    ]
    admitted = host.handle(run_request(job(sourceIds=[source_id])))
    broker = EvidenceBroker(w.store, first_lease(w, admitted), w.clock)
    exactly = json.loads(broker.search_source({"query": "hit"}))
    assert (len(exactly["hits"]), exactly["limited"]) == (MAX_SEARCH_HITS, False)
    w.fs.add_file(f"{PROJECT}/more.txt", lines + b"hit one more\n")
    more_id = host.handle({"version": 1, "op": "capture", "paths": ["more.txt"]})["sources"][0][
        "sourceId"
    ]
    admitted = host.handle(run_request(job(key="more", sourceIds=[more_id])))
    broker = EvidenceBroker(w.store, first_lease(w, admitted), w.clock)
    over = json.loads(broker.search_source({"query": "hit"}))
    assert (len(over["hits"]), over["limited"]) == (MAX_SEARCH_HITS, True)


def test_a_call_the_broker_refuses_when_it_runs_is_recorded_as_refused() -> None:
    w = world()
    _, broker, source_id = started_worker(w)
    for tool in ("read_source", "read_source", "cite_receipt"):
        assert broker.admit_tool(tool) == (True, "allowed")
    broker.read_source({"sourceId": source_id, "lineStart": 1, "lineEnd": 1})
    with pytest.raises(BrokerRefusal):
        broker.read_source({"sourceId": source_id, "lineStart": 1, "lineEnd": 99})
    with pytest.raises(BrokerRefusal):
        broker.cite_receipt({"receiptId": "rcpt-" + "0" * 32})
    recorded = outcomes(w)
    assert [o["allowed"] for o in recorded] == [True, False, False]
    assert "line range impossible" in recorded[1]["reason"]
    assert "not one of this job's receipts" in recorded[2]["reason"]
