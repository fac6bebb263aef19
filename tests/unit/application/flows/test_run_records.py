"""Durable flow runs on fakes: what a ``RecordedFlowRunner`` writes at the start, as each run
starts and settles, and at the end; which runs are shown interrupted; finding a run by id."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest

from application.flows.flow_journal import FlowJournal
from application.flows.run_records import RecordedFlowRunner
from application.flows.trace_setup import TraceDefaults
from domain.errors import ErrorCode
from domain.flows.call import TraceContext
from domain.flows.errors import FlowError
from domain.flows.run_record import FlowRunRecord, RecordStatus
from domain.flows.trace_identity import derived_ids
from tests.fakes.clock import FakeClock
from tests.fakes.delegation import FakeProcesses
from tests.fakes.flow_runs import InMemoryFlowRunRecords
from tests.fakes.tracing import FakeTraceSinks
from tests.unit.application.flows.engine import WHY, Engine

CHAIN = {
    "task": "g",
    "chain": [{"agent": "researcher", "task": "a"}, {"agent": "reviewer", "task": "b"}],
    "why": WHY,
}


@attrs.define
class FlowIds:
    """Flow ids (the first 16 hex digits) that differ from one call to the next."""

    issued: int = 0

    def uuid4_hex(self) -> str:
        self.issued += 1
        return f"{self.issued:016x}" + "0" * 16


class Recorded:
    def __init__(
        self, base: Path, records: InMemoryFlowRunRecords | None = None, **runner: Any
    ) -> None:
        self.records = records or InMemoryFlowRunRecords()
        self.processes = FakeProcesses(pid=300)
        self.journal = FlowJournal(self.records, FakeClock(), self.processes)
        self.engine = Engine(
            base, runner_class=RecordedFlowRunner, journal=self.journal, ids=FlowIds(), **runner
        )

    def only_history(self) -> list[FlowRunRecord]:
        (history,) = self.records.history.values()
        return history


@pytest.fixture
def recorded(tmp_path: Path) -> Recorded:
    return Recorded(tmp_path)


def _states(record: FlowRunRecord) -> list[tuple[str, str]]:
    return [(run.key, run.status) for run in record.runs]


def test_a_flow_is_recorded_at_the_start_after_each_run_and_at_the_end(
    recorded: Recorded,
) -> None:
    report = recorded.engine.run(CHAIN)
    history = recorded.only_history()
    assert [_states(r) for r in history] == [
        [],
        [("step-1", "running")],
        [("step-1", "completed")],
        [("step-1", "completed"), ("step-2", "running")],
        [("step-1", "completed"), ("step-2", "completed")],
        [("step-1", "completed"), ("step-2", "completed")],
    ]
    first, last = history[0], history[-1]
    assert first.run_id == last.run_id == report.flow_id
    assert first.status is RecordStatus.RUNNING
    assert first.ended_at is None
    assert (first.driver.pid if first.driver else None) == 300
    assert first.mode == "chain"
    assert first.call_digest.startswith("sha256:")
    assert last.status is RecordStatus.COMPLETED
    assert last.ended_at is not None
    assert last.summary == report.document()["summary"]
    # The call is kept where the re-run command names it, exactly as given.
    assert recorded.records.calls[first.rerun.call_file] == CHAIN
    assert first.rerun.cwd == str(recorded.engine.cwd)


def test_the_same_call_has_the_same_digest_whatever_its_key_order(recorded: Recorded) -> None:
    recorded.engine.run(CHAIN)
    recorded.engine.run(dict(reversed(list(CHAIN.items()))))
    digests = {history[0].call_digest for history in recorded.records.history.values()}
    assert len(recorded.records.history) == 2
    assert len(digests) == 1


def test_a_refused_call_spawns_nothing_and_leaves_no_record(recorded: Recorded) -> None:
    with pytest.raises(FlowError):
        recorded.engine.run({"agent": "researcher", "task": "t"})  # no why
    assert recorded.records.history == {}


def test_a_failed_run_and_the_skipped_ones_are_in_the_end_record(recorded: Recorded) -> None:
    recorded.engine.scripted.scripts["step-1"] = lambda child: child.exit(1, "x")
    recorded.engine.run(CHAIN)
    last = recorded.only_history()[-1]
    assert last.status is RecordStatus.FAILED
    assert _states(last) == [("step-1", "failed"), ("step-2", "skipped")]
    assert last.error is not None
    assert last.error.code == "CHILD_EXIT_NONZERO"
    assert last.runs[0].error_code == "CHILD_EXIT_NONZERO"


def test_a_refusal_after_the_spawns_ends_the_record_refused(tmp_path: Path) -> None:
    sinks = FakeTraceSinks(fail_spans=frozenset({"child.single"}))
    recorded = Recorded(tmp_path, trace_sinks=sinks, trace_defaults=TraceDefaults())
    call = {"agent": "researcher", "task": "t", "why": WHY, "traceFile": "t.jsonl"}
    with pytest.raises(FlowError):
        recorded.engine.run({**call, "traceStrict": True})
    last = recorded.only_history()[-1]
    assert last.status is RecordStatus.REFUSED
    assert last.error is not None
    assert last.error.code == "TRACE_INCOMPLETE"
    assert last.trace_file == str(recorded.engine.cwd / "t.jsonl")


class FullAfterTheStart(InMemoryFlowRunRecords):
    def save(self, record: FlowRunRecord) -> None:
        if record.runs:
            raise OSError(28, "No space left on device")
        super().save(record)


def test_a_record_that_cannot_be_written_mid_flow_does_not_stop_the_flow(
    tmp_path: Path,
) -> None:
    recorded = Recorded(tmp_path, FullAfterTheStart())
    report = recorded.engine.run(CHAIN)
    assert report.status == "completed"
    assert len(recorded.only_history()) == 1  # the start; every later write was refused


def test_a_root_span_with_a_trace_context_gets_the_derived_ids(tmp_path: Path) -> None:
    sinks = FakeTraceSinks()
    recorded = Recorded(tmp_path, trace_sinks=sinks, trace_defaults=TraceDefaults())
    context = {"runId": "eval", "caseId": "c1", "trialId": "t1"}
    call = {"agent": "researcher", "task": "t", "why": WHY, "traceFile": "t.jsonl"}
    recorded.engine.run({**call, "traceContext": context})
    root = sinks.last.started[0]
    assert root.role == "root"
    expected = derived_ids(TraceContext(run_id="eval", case_id="c1", trial_id="t1"), "single")
    assert (root.ref.trace_id, root.ref.span_id) == expected


def test_a_run_whose_driver_is_gone_without_an_end_is_interrupted(recorded: Recorded) -> None:
    recorded.engine.run(CHAIN)
    (run_id,) = recorded.records.history
    started = recorded.records.history[run_id][0]
    assert recorded.journal.find(run_id).status is RecordStatus.COMPLETED
    # The same run as if its process had been killed after the start record.
    recorded.records.save(started)
    assert recorded.journal.find(run_id).status is RecordStatus.RUNNING
    del recorded.processes.running[300]
    view = recorded.journal.find(run_id)
    assert view.status is RecordStatus.INTERRUPTED
    assert view.document()["next"] == {"action": "re-run", "command": started.rerun.command()}


def test_a_run_is_found_by_id_or_unique_prefix_and_the_newest_without_one(
    recorded: Recorded,
) -> None:
    recorded.engine.run(CHAIN)
    recorded.engine.run(CHAIN)
    older, newer = recorded.records.history
    assert recorded.journal.find(None).record.run_id == newer
    assert recorded.journal.find(older).record.run_id == older
    listing = recorded.journal.listing()
    assert [view.record.run_id for view in listing.views] == [newer, older]


def test_an_unknown_or_ambiguous_id_names_itself_and_flow_list(recorded: Recorded) -> None:
    with pytest.raises(FlowError) as nothing:
        recorded.journal.find(None)
    assert nothing.value.code is ErrorCode.FLOW_RUN_NOT_FOUND
    recorded.engine.run(CHAIN)
    recorded.engine.run(CHAIN)
    for reference in ("ffff", ""):
        with pytest.raises(FlowError) as caught:
            recorded.journal.find(reference)
        assert caught.value.code is ErrorCode.FLOW_RUN_NOT_FOUND
        assert repr(reference) in caught.value.message
        assert "`pi-squad flow list`" in caught.value.message


def test_a_workflow_keeps_the_call_that_resumes_it(recorded: Recorded) -> None:
    phases = [{"id": "plan", "agent": "researcher", "task": "Plan {task}"}]
    call = {"task": "t", "why": WHY, "workflow": {"phases": phases}}
    recorded.engine.run(call)
    first = recorded.only_history()[0]
    assert first.mode == "workflow"
    assert first.rerun.resume_file is not None
    assert recorded.records.calls[first.rerun.resume_file] == {
        **call,
        "workflow": {"phases": phases, "resume": True},
    }
    assert first.next_command(RecordStatus.INTERRUPTED) == ("resume", first.rerun.command())
