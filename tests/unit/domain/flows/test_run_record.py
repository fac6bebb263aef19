"""A flow run record's rules: what status it shows, which command follows it, and the trace
ids a ``traceContext`` derives."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import attrs

from domain.delegation.session import ProcessRecord
from domain.flows.call import TraceContext
from domain.flows.run_record import FlowRunRecord, RecordStatus, Rerun, RunState, resume_call
from domain.flows.trace_identity import derived_ids

STARTED = datetime(2026, 12, 7, 20, 0, tzinfo=UTC)


def record(**fields: Any) -> FlowRunRecord:
    base = FlowRunRecord(
        run_id="00000000000000ab",
        call_digest="sha256:" + "0" * 64,
        mode="chain",
        started_at=STARTED,
        rerun=Rerun("/root/.flow-runs/00000000000000ab/call.json", "/my project"),
        driver=ProcessRecord(4242, "boot:ns:99"),
    )
    return attrs.evolve(base, **fields)


def test_a_record_without_an_end_whose_driver_is_gone_is_interrupted() -> None:
    running = record()
    assert running.shown_status(driver_alive=False) is RecordStatus.INTERRUPTED
    assert running.shown_status(driver_alive=True) is RecordStatus.RUNNING
    # A driver that cannot be told (another pid namespace, no /proc) is never called gone.
    assert running.shown_status(driver_alive=None) is RecordStatus.RUNNING


def test_an_ended_record_keeps_its_status_whatever_its_driver() -> None:
    ended = record().finished(RecordStatus.FAILED, STARTED)
    assert ended.shown_status(driver_alive=False) is RecordStatus.FAILED


def test_an_interrupted_run_is_re_run_with_the_saved_call_and_its_options() -> None:
    found = attrs.evolve(record(), rerun=attrs.evolve(record().rerun, provider="p", model="p/m"))
    assert found.next_command(RecordStatus.INTERRUPTED) == (
        "re-run",
        "pi-squad flow --call /root/.flow-runs/00000000000000ab/call.json "
        "--cwd '/my project' --provider p --model p/m",
    )
    assert found.next_command(RecordStatus.FAILED) is not None
    assert found.next_command(RecordStatus.COMPLETED) is None
    assert found.next_command(RecordStatus.RUNNING) is None


def test_an_interrupted_workflow_is_resumed_and_a_failed_one_re_run() -> None:
    resumable = attrs.evolve(
        record(mode="workflow"),
        rerun=attrs.evolve(record().rerun, resume_file="/root/r/resume.json"),
    )
    action, command = resumable.next_command(RecordStatus.INTERRUPTED) or ("", "")
    assert action == "resume"
    assert command.startswith("pi-squad flow --call /root/r/resume.json")
    action, command = resumable.next_command(RecordStatus.FAILED) or ("", "")
    assert action == "re-run"
    assert "call.json" in command
    call = {"workflow": {"phases": [{"id": "a"}]}, "why": "w"}
    assert resume_call(call) == {"workflow": {"phases": [{"id": "a"}], "resume": True}, "why": "w"}
    assert resume_call({"preset": "gated", "task": "t"}) is None  # a preset's call: re-run


def test_a_settled_run_replaces_its_running_state() -> None:
    found = record().run_started("step-0", "scout").run_started("step-1", "planner")
    found = found.run_settled(RunState("step-0", "scout", "failed", "CHILD_TIMEOUT"))
    assert [(r.key, r.status, r.error_code) for r in found.runs] == [
        ("step-0", "failed", "CHILD_TIMEOUT"),
        ("step-1", "running", None),
    ]


def test_the_document_shows_the_status_as_of_now_and_what_to_type_next() -> None:
    document = record().document(driver_alive=False)
    assert document["status"] == "interrupted"
    assert document["driver"] == {"pid": 4242, "identity": "boot:ns:99", "alive": False}
    assert document["next"]["action"] == "re-run"
    assert document["next"]["command"] == document["rerun"]
    assert document["resume"] is None


CONTEXT = TraceContext(run_id="eval-7", case_id="case-3", trial_id="t1", trial_index=0)


def test_the_same_trace_context_and_mode_derive_the_same_ids() -> None:
    first = derived_ids(CONTEXT, "chain")
    assert first == derived_ids(attrs.evolve(CONTEXT), "chain")
    assert first is not None
    trace_id, span_id = first
    assert (len(trace_id), len(span_id)) == (32, 16)
    assert 0 not in (int(trace_id, 16), int(span_id, 16))
    assert trace_id == trace_id.lower()


def test_another_mode_trial_or_attempt_derives_other_ids() -> None:
    first = derived_ids(CONTEXT, "chain")
    assert derived_ids(CONTEXT, "parallel") != first
    assert derived_ids(attrs.evolve(CONTEXT, trial_id="t2"), "chain") != first
    assert derived_ids(attrs.evolve(CONTEXT, attempt=2), "chain") != first


def test_without_a_trace_context_nothing_is_derived() -> None:
    assert derived_ids(None, "chain") is None
