"""One frame of the watch view: a squad's read-only status report (``application.squads.status``:
attestation state and chunks read, from one verified read of the canonical spec) plus what the
committed task records add (usage and timestamps). Reading a frame never writes anything: no
lock, no transaction, no file moved."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime

import attrs

from adapters.store.json_records import CorruptRecord
from application.ports import Clock, SquadSnapshot, StableReadError, Store
from application.spec_reads import AttestationStatus
from application.squads.status import SquadStatusReader, SquadStatusReport, TaskStatusLine
from domain.errors import ErrorCode, SquadOperationError
from domain.squad.model import SpecRef, SquadStatus, Task, TaskStatus
from domain.usage import Usage

READ_ATTEMPTS = 5
RETRY_PAUSE_SECONDS = 0.05


@attrs.frozen
class TaskRow:
    """A task's status line and what its committed record adds. In file mode the line's title
    is spec content: the views never show it."""

    line: TaskStatusLine
    elapsed_seconds: float | None
    usage: Usage


@attrs.frozen
class Frame:
    report: SquadStatusReport
    rows: tuple[TaskRow, ...]

    @property
    def squad_id(self) -> str:
        return self.report.squad.id

    @property
    def status(self) -> SquadStatus:
        return self.report.squad.status

    @property
    def spec(self) -> SpecRef | None:
        return self.report.squad.spec


def _elapsed_seconds(task: Task, now: datetime) -> float | None:
    """Start to completion once ended; start to now while in progress."""
    if task.started is not None and task.completed is not None:
        return (task.completed - task.started).total_seconds()
    if task.started is not None and task.status is TaskStatus.IN_PROGRESS:
        return (now - task.started).total_seconds()
    return None


def build_frame(report: SquadStatusReport, snapshot: SquadSnapshot, now: datetime) -> Frame:
    rows = []
    for line in report.tasks:
        task = snapshot.tasks.get(line.task_id)
        if task is None:
            rows.append(TaskRow(line=line, elapsed_seconds=None, usage=Usage()))
        else:
            rows.append(
                TaskRow(line=line, elapsed_seconds=_elapsed_seconds(task, now), usage=task.usage)
            )
    return Frame(report=report, rows=tuple(rows))


def _suspicious(frame: Frame) -> bool:
    """Something a file replaced in the middle of its read looks like for an instant."""
    return frame.spec is not None and any(
        row.line.attestation is AttestationStatus.INVALID or row.line.chunks_read is None
        for row in frame.rows
        if row.line.status is not TaskStatus.CANCELLED
    )


@attrs.frozen
class FrameSource:
    """Reads one frame of one squad: the status report, then the committed task records.

    Other processes replace these files atomically while they are read, so a read can be
    refused (the file changed under it) or an attestation can look invalid for an instant: such
    a read is repeated after a short pause before it is believed.
    """

    reader: SquadStatusReader
    store: Store
    clock: Clock
    squad_id: str
    pause: Callable[[float], None] = time.sleep

    def __call__(self) -> Frame:
        frame = self._read()
        if _suspicious(frame):
            self.pause(RETRY_PAUSE_SECONDS)
            frame = self._read()
        return frame

    def _read(self) -> Frame:
        attempt = 1
        while True:
            try:
                report = self.reader.status(self.squad_id)
                snapshot = self.store.snapshot(self.squad_id)
            except (StableReadError, CorruptRecord) as exc:
                if attempt >= READ_ATTEMPTS:
                    if isinstance(exc, CorruptRecord):
                        raise  # RECORD_CORRUPT, naming the file: retrying did not help
                    raise SquadOperationError(
                        ErrorCode.OPERATION_REFUSED,
                        f"cannot read squad '{self.squad_id}' under {self.store.root}: {exc}; "
                        "retry, and if it persists run `pi-squad verify` on the squad",
                    ) from None
                attempt += 1
                self.pause(RETRY_PAUSE_SECONDS)
            else:
                return build_frame(report, snapshot, self.clock.now())
