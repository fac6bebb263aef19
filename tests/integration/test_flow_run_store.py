"""The flow run records on the real file system (``adapters/store/flow_runs.py``): a record
reads back as written, an unreadable one is reported (never shown as a run), and a name that
is not a run id never becomes a path."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from adapters.store.flow_runs import RECORD_FILE, RUNS_DIR, FileFlowRunRecords
from application.flows.flow_journal import FlowJournal
from domain.delegation.session import ProcessRecord
from domain.flows.run_record import FlowRunRecord, RecordedError, RecordStatus, Rerun, RunState
from tests.fakes.clock import FakeClock
from tests.fakes.delegation import FakeProcesses
from tests.host_fs import host_file_system

RECORD = FlowRunRecord(
    run_id="0123456789abcdef",
    call_digest="sha256:" + "a" * 64,
    mode="workflow",
    started_at=datetime(2026, 12, 7, 20, 0, 1, 123000, tzinfo=UTC),
    rerun=Rerun("/r/call.json", "/p", provider="p", model="p/m", resume_file="/r/resume.json"),
    driver=ProcessRecord(77, "boot:4026531836:123"),
    status=RecordStatus.FAILED,
    ended_at=datetime(2026, 12, 7, 20, 5, tzinfo=UTC),
    runs=(RunState("phase-1", "worker", "failed", "CHILD_TIMEOUT"),),
    summary="Flow workflow: 0/1 phases completed.",
    error=RecordedError("CHILD_TIMEOUT", "the child ran past its 600000 ms"),
    trace_file="/p/t.jsonl",
)


def test_a_record_reads_back_as_it_was_written(tmp_path: Path) -> None:
    records = FileFlowRunRecords(host_file_system(), str(tmp_path))
    records.save(RECORD)
    assert records.run_ids() == [RECORD.run_id]
    assert records.load(RECORD.run_id) == RECORD
    assert records.load("fedcba9876543210") is None


def test_an_unreadable_record_is_listed_apart(tmp_path: Path) -> None:
    records = FileFlowRunRecords(host_file_system(), str(tmp_path))
    records.save(RECORD)
    broken = tmp_path / RUNS_DIR / "00000000000000ff"
    broken.mkdir()
    (broken / RECORD_FILE).write_text('{"runId": "00000000000000ff"}', encoding="utf-8")
    listing = FlowJournal(records, FakeClock(), FakeProcesses()).listing()
    assert [view.record.run_id for view in listing.views] == [RECORD.run_id]
    ((run_id, why),) = listing.unreadable
    assert run_id == "00000000000000ff"
    assert "not a flow run record" in why


@pytest.mark.parametrize("run_id", ["../x", "ABC", "", "a/b"])
def test_a_name_that_is_not_a_run_id_is_refused(tmp_path: Path, run_id: str) -> None:
    records = FileFlowRunRecords(host_file_system(), str(tmp_path))
    with pytest.raises(ValueError, match="not a flow run id"):
        records.load(run_id)
    with pytest.raises(ValueError, match="not a flow run id"):
        records.save_call(run_id, "call.json", {})
