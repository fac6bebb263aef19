"""``PiWorkerRuntime`` over a fake ``ChildRuntime``: the spawn it asks for (broker tools only,
closed context, observed output, the worker's environment), and what it reports: usage per
request and summed, the last message as raw bytes, a model other than the bound route as a
failure, a streamed chunk over the ceiling as an overflow (killed, nothing parsed)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from adapters.delegation.workers import PiWorkerRuntime
from adapters.isolation.confinement import confined_launch, remove_scratch
from adapters.pi_rpc import SpawnFailed
from application.ports import (
    AssistantText,
    ChildEvent,
    ChildHandle,
    Confinement,
    IsolationSupport,
    OutputProgress,
    ProviderError,
    SpawnRequest,
)
from domain.delegation.envelope import ModelRoute
from tests.fakes.broker import InMemoryBrokerHosting
from tests.fakes.child_runtime import FakeChild, FakeChildRuntime
from tests.fakes.delegation import RecordingWorkerHost
from tests.fakes.isolation import FakeIsolation
from tests.unit.application.delegation.support import run_request, world


@attrs.define
class RecordingHost(RecordingWorkerHost):
    runtime: Any = None
    world: Any = None  # whose store the host's broker answers over


@attrs.define
class FlakyChildRuntime(FakeChildRuntime):
    """Fails the first spawns with the given ``SpawnFailed`` stages, then starts fakes."""

    failures: list[bool] = attrs.field(factory=list)  # before_prompt of each failure
    attempts: list[str] = attrs.field(factory=list)  # the cwd of every spawn asked for

    def spawn(self, request: SpawnRequest, sink: Callable[[ChildEvent], None]) -> ChildHandle:
        self.attempts.append(request.cwd)
        if self.failures:
            raise SpawnFailed("t", "c", "scripted", before_prompt=self.failures.pop(0))
        return super().spawn(request, sink)


def started(
    model: str | None = "m1",
    max_output: int = 4096,
    children: FakeChildRuntime | None = None,
    isolation: IsolationSupport | None = None,
    brokers: InMemoryBrokerHosting | None = None,
) -> tuple[Any, Any, Any]:
    w = world()
    request = run_request()
    request["limits"]["maxOutputBytes"] = max_output
    w.host().handle(request)
    start = w.runtime.starts[0]
    envelope = attrs.evolve(
        start.envelope,
        limits=attrs.evolve(start.envelope.limits, deadline_at_ms=int(time.time() * 1000) + 60_000),
        model_route=ModelRoute("p1", model, None, 1),
    )
    start = attrs.evolve(start, envelope=envelope)
    children = children if children is not None else FakeChildRuntime()
    host = RecordingHost()
    runtime = PiWorkerRuntime(
        children,
        squad_root="/root",
        agent_dir="/nonexistent/agent",
        store=w.store,
        brokers=brokers if brokers is not None else InMemoryBrokerHosting(),
        isolation=isolation,
    )
    runtime.bind(host)
    host.runtime, host.world = runtime, w
    runtime.start(start)
    deadline = time.monotonic() + 10
    while not (children.spawned or host.reported.is_set()) and time.monotonic() < deadline:
        time.sleep(0.01)
    return (children.spawned[0] if children.spawned else None), host, start


def message(child: FakeChild, text: str, **extra: Any) -> None:
    child.sink(
        AssistantText(child.task_id, child.child_id, text, 10, 5, 0.5, usage_reported=True, **extra)
    )


def test_the_spawn_is_a_closed_broker_only_worker() -> None:
    child, host, start = started()
    request = child.request
    assert request.tools == ("read_source", "search_source", "cite_receipt")
    assert request.closed_context
    assert request.observe_output
    assert request.environment["PI_SQUAD_DELEGATION_LEASE"] == start.lease.token
    assert request.environment["PI_SQUAD_ROOT"] == "/root"
    # Its own Pi agent directory in its private working directory (Pi's retries off there:
    # like every child it trusts no project, so project settings would not apply).
    agent = Path(request.environment["PI_CODING_AGENT_DIR"])
    assert agent.parent == Path(request.cwd)
    assert json.loads((agent / "settings.json").read_text())["retry"]["enabled"] is False
    assert start.packet.decode() in request.first_prompt
    assert (request.model, request.provider) == ("m1", "p1")
    child.settle()
    assert host.reported.wait(5)


def test_under_landlock_a_worker_writes_only_its_directory() -> None:
    child, host, _ = started(isolation=FakeIsolation().support())
    request = child.request
    private = request.cwd
    assert request.confinement == Confinement(
        squad_root="/root",
        ledger_dir=private,
        project_dir=private,
        agent_dir=f"{private}/agent",
    )
    isolation = FakeIsolation()
    launch = confined_launch(isolation, ["pi"], {"HOME": "/nonexistent"}, request.confinement)
    try:
        (call,) = isolation.calls
        # The private directory, the runtime's scratch (TMPDIR) and /dev/null: nothing of the
        # squad root (the session's records are the host's broker's), the project or home.
        assert set(call.writable) == {private, launch.scratch_dir, "/dev/null"}
        assert not any(path.startswith("/root") for path in call.writable)
        # The worker's own agent directory (Pi's retries off), not a fresh copy of the user's.
        assert launch.env["PI_CODING_AGENT_DIR"] == f"{private}/agent"
    finally:
        remove_scratch(launch.scratch_dir)
    child.settle()
    assert host.reported.wait(5)


def test_the_host_serves_the_broker_and_the_worker_is_told_where() -> None:
    brokers = InMemoryBrokerHosting()
    child, host, start = started(brokers=brokers)
    (endpoint,) = brokers.endpoints
    assert child.request.environment["PI_SQUAD_DELEGATION_BROKER"] == endpoint.address
    # The worker's bridge reaches the host's broker for its own lease, and only that lease.
    # (The runtime's clock is the system's, past the fake world's deadline: refused, recorded.)
    client = brokers.client(endpoint.address, start.lease)
    assert client.admit_tool("read_source") == (False, "the job deadline passed")
    state = host.world.store.snapshot(start.lease.session)
    assert state is not None
    assert [o["tool"] for o in state.attempts()[0][2].tool_outcomes] == ["read_source"]
    forged = attrs.evolve(start.lease, token="forged")
    allowed, reason = brokers.client(endpoint.address, forged).admit_tool("read_source")
    assert (allowed, "not live" in reason) == (False, True)
    child.settle()
    assert host.reported.wait(5)
    host.runtime.stop_all()
    assert endpoint.closed


def test_without_landlock_a_worker_runs_unconfined() -> None:
    child, host, _ = started(isolation=FakeIsolation.none().support())
    assert child.request.confinement is None
    child.settle()
    assert host.reported.wait(5)


def test_usage_is_kept_per_request_and_summed_and_the_last_message_is_the_raw_result() -> None:
    child, host, _ = started()
    message(child, "thinking aloud", model="m1", provider="p1", cache_read=3)
    message(child, '{"final": true}', model="m1", provider="p1")
    child.settle()
    assert host.reported.wait(5)
    (outcome,) = host.reports
    assert outcome.raw == b'{"final": true}'
    assert [u.input_tokens for u in outcome.per_request] == [10, 10]
    assert outcome.usage.input_tokens == 20
    assert outcome.usage.output_tokens == 10
    # One message reported cacheRead, the other did not: the sum is what was reported.
    assert outcome.usage.reported_value("cache_read") == 3
    assert [u.reported_value("cache_read") for u in outcome.per_request] == [3, None]
    assert outcome.usage.turns == 2


def test_another_model_than_the_bound_route_fails_the_attempt() -> None:
    child, host, _ = started(model="m1")
    message(child, "hello", model="m2", provider="p1")
    assert host.reported.wait(5)
    (outcome,) = host.reports
    assert outcome.stop_reason == "error"
    assert outcome.problem is not None
    assert "model m2" in outcome.problem
    assert child.killed


def test_a_streamed_chunk_over_the_ceiling_stops_the_worker() -> None:
    child, host, _ = started(max_output=256)
    child.sink(OutputProgress(child.task_id, child.child_id, 250))
    assert not host.reported.is_set()
    child.sink(OutputProgress(child.task_id, child.child_id, 274))
    assert host.reported.wait(5)
    (outcome,) = host.reports
    assert outcome.overflow
    assert outcome.raw == b""
    assert outcome.received_bytes == 274
    assert child.killed


def test_a_start_that_failed_before_the_prompt_is_retried_once_in_a_fresh_directory() -> None:
    children = FlakyChildRuntime(failures=[True])
    child, host, _ = started(children=children)
    assert child is not None
    assert len(children.attempts) == 2
    assert children.attempts[0] != children.attempts[1]
    child.settle()
    assert host.reported.wait(5)
    assert host.reports[0].start_retries == 1


def test_a_start_that_failed_after_the_prompt_is_never_retried() -> None:
    # The first prompt may have reached the provider: starting again could bill it twice.
    children = FlakyChildRuntime(failures=[False])
    child, host, _ = started(children=children)
    assert host.reported.wait(5)
    assert child is None
    assert len(children.attempts) == 1
    (outcome,) = host.reports
    assert outcome.stop_reason == "error"
    assert outcome.problem is not None
    assert outcome.problem.startswith("the worker did not start")


def test_a_provider_error_reports_its_kind_message_and_responses() -> None:
    child, host, _ = started()
    message(child, "thinking", model="m1", provider="p1")  # a response
    message(child, "", model="m1", provider="p1", stop_reason="error")
    child.sink(ProviderError(child.task_id, child.child_id, "503 Service Unavailable"))
    child.settle()
    assert host.reported.wait(5)
    (outcome,) = host.reports
    assert (outcome.stop_reason, outcome.failure) == ("error", "provider_error")
    assert outcome.error_message == "503 Service Unavailable"
    assert outcome.responses == 1  # the message that stopped with error is not a response


def test_an_exit_is_a_transient_kind_only_when_the_worker_died_on_its_own() -> None:
    child, host, _ = started()
    child.exit(137)
    assert host.reported.wait(5)
    assert (host.reports[0].failure, host.reports[0].responses) == ("exited", 0)
    # A worker the host stopped (cancel, shutdown) that exits is aborted: never retried.
    child, host, start = started()
    assert host.runtime.cancel(start.lease)
    child.exit(-15, unexpected=False)
    assert host.reported.wait(5)
    assert host.reports[0].failure == "aborted"


def test_a_retry_waits_its_backoff_and_a_stop_during_it_starts_nothing() -> None:
    w = world()
    w.host().handle(run_request())
    start = attrs.evolve(
        w.runtime.starts[0],
        envelope=attrs.evolve(
            w.runtime.starts[0].envelope,
            limits=attrs.evolve(
                w.runtime.starts[0].envelope.limits,
                deadline_at_ms=int(time.time() * 1000) + 60_000,
            ),
        ),
        delay_ms=5_000,
    )
    children = FakeChildRuntime()
    host = RecordingHost()
    runtime = PiWorkerRuntime(
        children,
        squad_root="/root",
        agent_dir="/nonexistent/agent",
        store=w.store,
        brokers=InMemoryBrokerHosting(),
    )
    runtime.bind(host)
    runtime.start(start)
    time.sleep(0.2)
    assert children.spawned == []  # still waiting out the backoff
    assert runtime.cancel(start.lease)
    assert host.reported.wait(5)
    assert children.spawned == []
    assert host.reports[0].failure == "aborted"
    assert runtime.wait_idle(5)


def test_the_worker_process_is_recorded_for_recovery() -> None:
    child, host, _ = started()
    assert child is not None
    child.settle()
    assert host.reported.wait(5)
    assert host.pids == [child.pid]


def test_cancel_confirms_only_workers_this_process_started() -> None:
    """A lease whose worker runs in another process (or nowhere) is never reported stopped
    here: its slot must stay settling, not be released under a worker that may still run."""
    child, host, start = started()
    foreign = attrs.evolve(start.lease, attempt_id="attempt-started-elsewhere")
    assert host.runtime.cancel(foreign) is False
    child.settle()
    child.exit(0, "", unexpected=False)
    assert host.reported.wait(5)
    assert host.runtime.wait_idle(5)
    # Its own worker, ended and forgotten, is confirmed stopped.
    assert host.runtime.cancel(start.lease) is True
