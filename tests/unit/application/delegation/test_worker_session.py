"""``WorkerAttempt`` over the ports alone (a fake runtime, a fake clock, recorded temporary
directories, a scripted platform setup): the job deadline is the clock's, a retried start gets
a fresh directory and the failed one's is removed, only a start the platform calls restartable
is retried and only while the deadline leaves time, and the worker's directory is removed
whenever it ends."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs

from application.delegation.worker_session import (
    TOOL_USE,
    WorkerAttempt,
    WorkerPorts,
    receipt_usage,
)
from application.ports import (
    AssistantText,
    ChildEvent,
    ChildHandle,
    Confinement,
    ProviderRecovery,
    SpawnRequest,
    WorkerLease,
    WorkerOutcome,
    WorkerStart,
)
from domain.child_environment import WORKER_DIR_PREFIX
from domain.usage import Usage
from tests.fakes.child_runtime import FakeChild, FakeChildRuntime
from tests.fakes.clock import FakeClock
from tests.fakes.delegation import RecordingWorkerHost
from tests.fakes.temp_dirs import RecordingTempDirs
from tests.unit.application.delegation.support import run_request, world


class Restartable(Exception):
    """A start that failed before its first prompt."""


@attrs.define
class ScriptedSetup:
    prepared: list[str] = attrs.field(factory=list)

    def prepare(self, directory: str) -> Mapping[str, str]:
        self.prepared.append(directory)
        return {"PLATFORM": directory}

    def confinement(self, directory: str, lease: WorkerLease) -> Confinement | None:
        return Confinement(squad_root="/root", ledger_dir="/root/s", project_dir=directory)

    def restartable(self, error: Exception) -> bool:
        return isinstance(error, Restartable)

    def process_id(self, handle: ChildHandle) -> int | None:
        return 7


@attrs.define
class FailingRuntime(FakeChildRuntime):
    """Raises the given errors on the first spawns, then starts fakes."""

    errors: list[Exception] = attrs.field(factory=list)

    def spawn(self, request: SpawnRequest, sink: Callable[[ChildEvent], None]) -> ChildHandle:
        if self.errors:
            raise self.errors.pop(0)
        return super().spawn(request, sink)


@attrs.define
class Attempt:
    clock: FakeClock = attrs.field(factory=FakeClock)
    children: FakeChildRuntime = attrs.field(factory=FailingRuntime)
    temp_dirs: RecordingTempDirs = attrs.field(factory=RecordingTempDirs)
    setup: ScriptedSetup = attrs.field(factory=ScriptedSetup)
    host: RecordingWorkerHost = attrs.field(factory=RecordingWorkerHost)
    ended: list[str] = attrs.field(factory=list)

    def attempt(self, seconds_left: float = 60.0) -> WorkerAttempt:
        w = world()
        w.host().handle(run_request())
        start: WorkerStart = w.runtime.starts[0]
        deadline_ms = int(self.clock.current.timestamp() * 1000 + seconds_left * 1000)
        limits = attrs.evolve(start.envelope.limits, deadline_at_ms=deadline_ms)
        start = attrs.evolve(start, envelope=attrs.evolve(start.envelope, limits=limits))
        ports = WorkerPorts(self.children, self.clock, self.temp_dirs, self.setup)
        return WorkerAttempt(start, ports, host=self.host, ended=self.ended.append)

    @property
    def child(self) -> FakeChild:
        return self.children.spawned[-1]


def test_the_job_deadline_is_read_on_the_clock_and_kills_the_worker() -> None:
    attempt = Attempt()
    attempt.children.on_spawn = lambda _child: attempt.clock.advance(61)
    worker = attempt.attempt(seconds_left=60)
    worker.run()  # returns at once: the deadline passed on the clock while Pi started
    (outcome,) = attempt.host.reports
    assert (outcome.failure, outcome.problem) == ("deadline", "the job deadline passed")
    assert attempt.child.killed
    assert attempt.host.pids == [7]
    # The killed worker's exit removes its directory and ends it in the runtime.
    attempt.child.exit(-15, unexpected=False)
    assert attempt.temp_dirs.live == []
    assert attempt.ended == [worker.lease.attempt_id]
    assert len(attempt.host.reports) == 1, "reported once"


def test_a_restartable_start_is_retried_once_in_a_fresh_directory() -> None:
    attempt = Attempt(children=FailingRuntime(errors=[Restartable("no session yet")]))
    attempt.children.on_spawn = lambda child: child.settle()
    attempt.attempt().run()
    first, second = attempt.temp_dirs.opened
    assert first.rsplit("/", 1)[1].startswith(WORKER_DIR_PREFIX)
    assert attempt.temp_dirs.removed == [first]
    assert attempt.setup.prepared == [first, second]
    request = attempt.child.request
    assert (request.cwd, request.environment["PLATFORM"]) == (second, second)
    # Confined as the platform says, to the fresh directory.
    assert request.confinement == Confinement("/root", "/root/s", second)
    (outcome,) = attempt.host.reports
    assert outcome.start_retries == 1


def test_any_other_start_failure_is_final_and_removes_the_directory() -> None:
    attempt = Attempt(children=FailingRuntime(errors=[RuntimeError("no pi")]))
    worker = attempt.attempt()
    worker.run()
    (outcome,) = attempt.host.reports
    assert outcome.failure == "start_failed"
    assert outcome.problem == "the worker did not start (no pi)"
    assert len(attempt.temp_dirs.opened) == 1
    assert attempt.temp_dirs.live == []
    assert attempt.ended == [worker.lease.attempt_id]


def test_a_restartable_start_is_not_retried_when_the_deadline_is_too_close() -> None:
    attempt = Attempt(children=FailingRuntime(errors=[Restartable("no session yet")]))
    attempt.attempt(seconds_left=9).run()
    (outcome,) = attempt.host.reports
    assert outcome.failure == "start_failed"
    assert attempt.children.spawned == []
    assert attempt.temp_dirs.live == []


def test_a_request_that_reported_no_usage_is_unknown_in_the_receipt() -> None:
    attempt = Attempt()
    worker = attempt.attempt()

    def answer(child: FakeChild) -> None:
        child.sink(AssistantText(child.task_id, child.child_id, "draft", 9, 9, 0.5))
        child.sink(
            AssistantText(child.task_id, child.child_id, "{}", 10, 5, 0.5, usage_reported=True)
        )
        child.settle()

    attempt.children.on_spawn = answer
    worker.run()
    (outcome,) = attempt.host.reports
    assert outcome.per_request[0] == Usage()
    assert outcome.per_request[1].input_tokens == 10
    assert (outcome.usage.input_tokens, outcome.usage.turns) == (10, 1)
    assert outcome.raw == b"{}"
    assert receipt_usage(Usage(input_tokens=3, turns=1)) == Usage()


def _bash_turn(child: FakeChild) -> None:
    """One assistant message that called only ``bash`` (Pi answers "not found" itself)."""
    child.sink(AssistantText(child.task_id, child.child_id, "", 5, 5, 0.0, stop_reason=TOOL_USE))


def test_a_turn_calling_only_absent_tools_is_stopped_at_the_request_allowance() -> None:
    """Issue 30: the follow-up of every message with tool calls is a request, whatever tool
    was called; the one past the allowance kills the worker and is counted on the receipt."""
    attempt = Attempt()
    worker = attempt.attempt()
    allowance = worker.allowance  # the job's maxRequests, held for this attempt

    def bash_forever(child: FakeChild) -> None:
        for _ in range(allowance + 5):
            if child.killed:
                return
            _bash_turn(child)
        child.settle()  # never reached while the rule holds: the worker was killed

    attempt.children.on_spawn = bash_forever
    worker.run()
    (outcome,) = attempt.host.reports
    assert (outcome.failure, outcome.problem) == (
        "request_limit",
        "the model-request limit is reached",
    )
    assert attempt.child.killed
    assert len(outcome.per_request) == allowance, "no message after the refused request"
    assert outcome.requests == allowance + 1, "the refused request is counted"


def test_a_compaction_is_a_request_counted_against_the_allowance() -> None:
    attempt = Attempt()
    worker = attempt.attempt()
    allowance = worker.allowance

    def compact_forever(child: FakeChild) -> None:
        for _ in range(allowance + 5):
            if child.killed:
                return
            child.sink(ProviderRecovery(child.task_id, child.child_id, "compaction"))
        child.settle()

    attempt.children.on_spawn = compact_forever
    worker.run()
    (outcome,) = attempt.host.reports
    assert outcome.failure == "request_limit"
    assert outcome.requests == allowance + 1
    assert outcome.provider_retries == allowance  # the refused one was never recorded


def test_a_worker_within_its_allowance_reports_each_request_it_made() -> None:
    attempt = Attempt()
    worker = attempt.attempt()

    def answer(child: FakeChild) -> None:
        _bash_turn(child)
        child.sink(AssistantText(child.task_id, child.child_id, "{}", 5, 5, 0.0))
        child.settle()

    attempt.children.on_spawn = answer
    worker.run()
    (outcome,) = attempt.host.reports
    assert outcome.failure is None
    assert outcome.requests == 2
    assert not attempt.child.killed


def test_a_refused_first_request_never_starts_the_worker() -> None:
    attempt = Attempt(host=RecordingWorkerHost(admit=False))
    attempt.attempt().run()
    (outcome,) = attempt.host.reports
    assert outcome.failure == "request_limit"
    assert attempt.children.spawned == []
    assert outcome.requests == 0


def test_the_receipt_counts_every_request_the_runtime_saw_the_refused_one_included() -> None:
    """The host trusts the parent's count: requests past those admitted (the refused one Pi
    may have sent before the kill, a compaction) are consumed on the receipt and the ledger."""
    w = world()
    host = w.host()
    admitted = host.handle(run_request())
    start: WorkerStart = w.runtime.starts[0]
    assert start.requests == admitted["effectiveLimits"]["maxRequests"]
    held = start.requests
    assert held is not None
    for _ in range(held):
        assert host.authorize_request(start.lease)
    assert not host.authorize_request(start.lease), "the allowance is spent"
    before = host.handle({"version": 1, "op": "status"})["ledger"]["consumed"]
    stopped = WorkerOutcome(
        stop_reason="aborted",
        failure="request_limit",
        problem="the model-request limit is reached",
        requests=held + 1,
    )
    host.report(start.lease, stopped)
    item = host.handle({"version": 1, "op": "collect", "batchId": admitted["batchId"]})
    receipt = item["items"][0]["receipt"]
    assert receipt["usage"]["requests"] == held + 1
    assert receipt["observations"]["failure"]["kind"] == "request_limit"
    after = host.handle({"version": 1, "op": "status"})["ledger"]["consumed"]
    assert after == before + 1
