"""Durable flow runs: every spawning flow leaves a record (``domain.flows.run_record``) that
``pi-squad flow status`` and ``flow list`` read back after the call, Pi or the process is gone.

``RecordedFlowRunner`` is the flow runner that keeps them: the record is opened once the call
is admitted (before the first spawn; a call refused earlier spawns nothing and leaves nothing),
written again each time a run starts or settles (through the runner's observer seam) and once
more at the end, whatever ended it. Each write replaces the whole record atomically.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import attrs

from application.flows.child_watch import Activity
from application.flows.dispatch import Observer
from application.flows.flow_journal import FlowJournal
from application.flows.flow_report import FlowReport
from application.flows.run_flow import FlowContext, FlowRunner
from application.flows.tracing import FlowTrace
from domain.flows.call import FlowCall
from domain.flows.canonical import canonical_sha256
from domain.flows.errors import FlowError
from domain.flows.run_record import (
    RESUMABLE_MODE,
    FlowRunRecord,
    RecordedError,
    RecordStatus,
    Rerun,
    RunState,
    resume_call,
)
from domain.flows.runs import ChildJob, RunResult

CALL_FILE = "call.json"
RESUME_FILE = "resume.json"


class Recording:
    """One flow call's record while it runs. Thread-safe: runs settle on the dispatcher's
    threads, and each write carries the whole record as it then is."""

    def __init__(self, journal: FlowJournal, document: object, context: FlowContext) -> None:
        self._journal = journal
        self._document = document
        self._context = context
        self._lock = threading.Lock()
        self.record: FlowRunRecord | None = None
        # Writes after the start that the file system refused: the flow goes on (its record
        # is evidence, not state it needs), and the next write carries everything again.
        self.unsaved = 0

    def opened(
        self, flow_id: str, call: FlowCall, trace: FlowTrace | None, observer: Observer | None
    ) -> Observer:
        """Write the first record; the observer that keeps it as runs start and settle. A
        failure to write it raises: nothing has spawned yet."""
        journal = self._journal
        records = journal.records
        call_file = records.save_call(flow_id, CALL_FILE, self._document)
        resume_file = None
        resuming = resume_call(self._document) if isinstance(self._document, dict) else None
        if str(call.mode) == RESUMABLE_MODE and resuming is not None:
            resume_file = records.save_call(flow_id, RESUME_FILE, resuming)
        record = FlowRunRecord(
            run_id=flow_id,
            call_digest=canonical_sha256(self._document),
            mode=str(call.mode),
            started_at=journal.clock.now(),
            rerun=Rerun(
                call_file,
                self._context.cwd,
                provider=self._context.session_provider,
                model=self._context.session_model,
                resume_file=resume_file,
            ),
            driver=journal.processes.me(),
            trace_file=trace.path if trace is not None else None,
        )
        with self._lock:
            self.record = record
            records.save(record)

        def watching(job: ChildJob, result: RunResult | None) -> None:
            if result is None:
                self._change(lambda r: r.run_started(job.key, job.role.agent))
            else:
                code = str(result.error_code) if result.error_code is not None else None
                state = RunState(job.key, job.role.agent, str(result.status), code)
                self._change(lambda r: r.run_settled(state))
            if observer is not None:
                observer(job, result)

        return watching

    def _change(self, change: Callable[[FlowRunRecord], FlowRunRecord]) -> None:
        with self._lock:
            if self.record is None:
                return
            self.record = change(self.record)
            try:
                self._journal.records.save(self.record)
            except OSError:
                self.unsaved += 1

    def ended(self, report: FlowReport) -> None:
        document = report.document()
        failed = next(
            (r for r in document["results"] if "error" in r and r["status"] == "failed"), None
        )
        error = None
        if failed is not None:
            error = RecordedError(str(failed["error"]["code"]), str(failed["error"]["message"]))
        status = RecordStatus(report.status)
        summary = str(document["summary"])
        # The report's results: the runs as they settled, and those never spawned (skipped).
        runs = tuple(
            RunState(r["key"], r["agent"], r["status"], r.get("error", {}).get("code"))
            for r in document["results"]
        )
        at = self._journal.clock.now()
        self._change(
            lambda r: attrs.evolve(r.finished(status, at, summary=summary, error=error), runs=runs)
        )

    def failed(self, error: BaseException) -> None:
        """The runner raised after the record was opened: a refusal after the spawns (a
        strict trace, a denied checkpoint) or a crash. Nothing to do for a call refused before
        it (no record)."""
        if isinstance(error, FlowError):
            status, recorded = RecordStatus.REFUSED, RecordedError(str(error.code), error.message)
        else:
            status = RecordStatus.CRASHED
            recorded = RecordedError(type(error).__name__, str(error) or type(error).__name__)
        at = self._journal.clock.now()
        self._change(lambda r: r.finished(status, at, error=recorded))


class RecordedFlowRunner(FlowRunner):
    """A ``FlowRunner`` whose every spawning call leaves a record in ``journal``. One call at
    a time, as ``FlowRunner.cancel`` already assumes."""

    def __init__(self, *, journal: FlowJournal, **ports: Any) -> None:
        super().__init__(**ports)
        self._journal = journal
        self._recording: Recording | None = None

    @property
    def run_id(self) -> str | None:
        """The running call's run id, once its record was opened."""
        recording = self._recording
        record = recording.record if recording is not None else None
        return record.run_id if record is not None else None

    def run(
        self,
        document: object,
        context: FlowContext,
        observer: Observer | None = None,
        activity: Activity | None = None,
        ceilings: Callable[[list[str]], None] | None = None,
    ) -> FlowReport:
        recording = Recording(self._journal, document, context)
        self._recording = recording
        try:
            report = super().run(document, context, observer, activity, ceilings)
        except BaseException as error:
            recording.failed(error)
            raise
        finally:
            self._recording = None
        recording.ended(report)
        return report

    def _admitted(
        self, flow_id: str, call: FlowCall, trace: FlowTrace | None, observer: Observer | None
    ) -> Observer | None:
        recording = self._recording
        if recording is None:
            return observer
        return recording.opened(flow_id, call, trace, observer)
