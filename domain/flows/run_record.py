"""What pi-squad keeps of a spawning flow run after the call (docs/flows.md, "Flow runs after
the call"): the call's canonical digest and mode, each run's state as it settles, the outcome,
the trace file, the process that drove it and the command that runs it again.

A record is written whole at the start, after each run settles and at the end. A record
without an end whose driving process is provably gone is shown ``interrupted``: nothing will
ever end it, and its command re-runs (or, for a ``workflow``, resumes) it.
"""

from __future__ import annotations

import enum
import shlex
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs

from domain.delegation.session import ProcessRecord
from domain.errors import ErrorCode

# The catalogue entry of ``pi-squad flow status``'s one code (``domain.flows.catalogue``
# splices it in): code, cause, fix, whether the unchanged command may succeed.
FLOW_RUN_ROWS: tuple[tuple[ErrorCode, str, str, bool], ...] = (
    (
        ErrorCode.FLOW_RUN_NOT_FOUND,
        "`pi-squad flow status ID` names no flow run recorded under this squad root (no "
        "record's id is or starts with it, or several do)",
        "run `pi-squad flow list` for the recorded runs and their ids, and check PI_SQUAD_ROOT",
        False,
    ),
)

# The one mode that picks up where it stopped: its re-run is the same call with
# ``workflow.resume`` set.
RESUMABLE_MODE = "workflow"
RESUME_FIELD = "resume"


class RecordStatus(enum.StrEnum):
    """What a record says of its run. ``running`` until the end is written; ``crashed``: the
    runner raised (a bug or a failed write), ``refused``: a check after the first spawn said no
    (a trace that lost spans under ``traceStrict``, a checkpoint denied)."""

    RUNNING = "running"
    COMPLETED = "completed"
    PARTIAL = "partial"
    FAILED = "failed"
    CANCELLED = "cancelled"
    REFUSED = "refused"
    CRASHED = "crashed"
    # Shown, never written: no end, and the driving process is gone.
    INTERRUPTED = "interrupted"


@attrs.frozen
class RunState:
    """One child run as last recorded: ``status`` ``running`` until it settles."""

    key: str
    agent: str
    status: str
    error_code: str | None = None

    def document(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "agent": self.agent,
            "status": self.status,
            "errorCode": self.error_code,
        }


@attrs.frozen
class RecordedError:
    code: str
    message: str

    def document(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


@attrs.frozen
class Rerun:
    """What runs the call again: the saved call file, and the options the first run had."""

    call_file: str
    cwd: str
    provider: str | None = None
    model: str | None = None
    # A workflow's saved call with ``"resume": true``, run instead of ``call_file``.
    resume_file: str | None = None

    def command(self) -> str:
        argv = ["pi-squad", "flow", "--call", self.resume_file or self.call_file]
        argv += ["--cwd", self.cwd]
        if self.provider is not None:
            argv += ["--provider", self.provider]
        if self.model is not None:
            argv += ["--model", self.model]
        return shlex.join(argv)


@attrs.frozen
class FlowRunRecord:
    run_id: str
    call_digest: str
    mode: str
    started_at: datetime
    rerun: Rerun
    driver: ProcessRecord | None
    status: RecordStatus = RecordStatus.RUNNING
    ended_at: datetime | None = None
    runs: tuple[RunState, ...] = ()
    summary: str | None = None
    error: RecordedError | None = None
    trace_file: str | None = None

    @property
    def ended(self) -> bool:
        return self.ended_at is not None

    def run_started(self, key: str, agent: str) -> FlowRunRecord:
        kept = tuple(run for run in self.runs if run.key != key)
        return attrs.evolve(self, runs=(*kept, RunState(key, agent, str(RecordStatus.RUNNING))))

    def run_settled(self, state: RunState) -> FlowRunRecord:
        """``state`` in place of the run's earlier one (a run never seen starting is added)."""
        if not any(run.key == state.key for run in self.runs):
            return attrs.evolve(self, runs=(*self.runs, state))
        return attrs.evolve(
            self, runs=tuple(state if run.key == state.key else run for run in self.runs)
        )

    def finished(
        self,
        status: RecordStatus,
        at: datetime,
        *,
        summary: str | None = None,
        error: RecordedError | None = None,
    ) -> FlowRunRecord:
        return attrs.evolve(self, status=status, ended_at=at, summary=summary, error=error)

    def shown_status(self, driver_alive: bool | None) -> RecordStatus:
        """The status to show: a record never ended whose driver is provably gone
        (``driver_alive`` ``False``) is ``interrupted``; one that cannot be told stays
        ``running``."""
        if self.ended or driver_alive is not False:
            return self.status
        return RecordStatus.INTERRUPTED

    def next_command(self, shown: RecordStatus) -> tuple[str, str] | None:
        """``(what, command)``: ``resume`` for an interrupted workflow, ``re-run`` for any
        other run that did not complete; ``None`` for a completed or still running one."""
        if shown in (RecordStatus.RUNNING, RecordStatus.COMPLETED):
            return None
        if shown is RecordStatus.INTERRUPTED and self.rerun.resume_file is not None:
            return "resume", self.rerun.command()
        return "re-run", attrs.evolve(self.rerun, resume_file=None).command()

    def document(self, driver_alive: bool | None = None) -> dict[str, Any]:
        """The record as ``flow status --json`` shows it (``status`` as shown)."""
        shown = self.shown_status(driver_alive)
        following = self.next_command(shown)
        return {
            "runId": self.run_id,
            "mode": self.mode,
            "status": str(shown),
            "callDigest": self.call_digest,
            "startedAt": self.started_at.isoformat(),
            "endedAt": self.ended_at.isoformat() if self.ended_at is not None else None,
            "runs": [run.document() for run in self.runs],
            "summary": self.summary,
            "error": self.error.document() if self.error is not None else None,
            "traceFile": self.trace_file,
            "driver": (
                {"pid": self.driver.pid, "identity": self.driver.identity, "alive": driver_alive}
                if self.driver is not None
                else None
            ),
            "callFile": self.rerun.call_file,
            "rerun": attrs.evolve(self.rerun, resume_file=None).command(),
            "resume": self.rerun.command() if self.rerun.resume_file is not None else None,
            "next": {"action": following[0], "command": following[1]} if following else None,
        }


def resume_call(document: Mapping[str, Any]) -> dict[str, Any] | None:
    """The workflow call that resumes where its run stopped (``"workflow": {..., "resume":
    true}``); ``None`` for a call without its own ``workflow`` object (a preset's: re-run)."""
    workflow = document.get(RESUMABLE_MODE)
    if not isinstance(workflow, Mapping):
        return None
    return {**document, RESUMABLE_MODE: {**workflow, RESUME_FIELD: True}}
