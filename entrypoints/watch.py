"""``pi-squad watch``: a squad's progress, live, read-only; the same view ``run`` shows.

A frame is built from the read-only status report (``application.status``: attestation state
and chunks read, from one verified read of the canonical spec) plus the committed task records
(usage and timestamps). Watching never writes anything: no lock, no transaction, no file moved.

On a terminal the frame is a ``rich`` live table. Otherwise each change is one plain line in a
stable format (:class:`PlainLines`), which scripts and the snapshot test rely on:

    squad <id>: <status>[, review <state>][, quarantined: ...][, canonical spec FAILS: ...]
    task <id> (<agent>): <status>[ chunks n/N][ attestation <state>][ blocked by: a, b]
        [ tokens <in>/<out> cost $<cost> took <elapsed>]   (the last part once a task ended)

A line is printed when the squad's status, review state, quarantine or canonical verdict
changes, or a task's status, chunks read, attestation state or blockers change. In file mode
titles and descriptions are spec content and never shown.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any, Protocol, TextIO

import attrs
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from adapters.store_json import CorruptRecord
from application.ports import Clock, SquadSnapshot, StableReadError, Store
from application.scheduler import Notice
from application.spec_reads import AttestationStatus
from application.status import (
    ICONS,
    OTHER_ICON,
    SquadStatusReader,
    SquadStatusReport,
    format_elapsed,
)
from domain.attestation.timestamps import format_rfc3339_millis
from domain.errors import ErrorCode, SquadOperationError
from domain.squad.model import SpecRef, SquadStatus, TaskStatus
from entrypoints.container import CliContainer
from entrypoints.output import EXIT_OK, EXIT_REFUSED, emit_json

DEFAULT_INTERVAL_SECONDS = 1.0
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report Ctrl-C
WATCH_STOP_STATUSES = frozenset({SquadStatus.REVIEW, SquadStatus.DONE, SquadStatus.FAILED})
ENDED_TASK_STATUSES = frozenset({TaskStatus.DONE, TaskStatus.FAILED, TaskStatus.CANCELLED})

_STATUS_STYLES = {
    TaskStatus.DONE: "green",
    TaskStatus.IN_PROGRESS: "yellow",
    TaskStatus.FAILED: "bold red",
    TaskStatus.SUSPENDED: "magenta",
    TaskStatus.CANCELLED: "dim",
    TaskStatus.BLOCKED: "dim",
}
_ATTESTATION_STYLES = {
    AttestationStatus.VALID: "green",
    AttestationStatus.INVALID: "bold red",
    AttestationStatus.MISSING: "dim",
    AttestationStatus.NOT_REQUIRED: "dim",
}


# -- one frame -----------------------------------------------------------------------------------


@attrs.frozen
class TaskRow:
    task_id: str
    agent: str
    title: str | None  # ``None`` in file mode: a title is spec content
    status: TaskStatus
    blocked_by: tuple[str, ...]
    elapsed_seconds: float | None
    input_tokens: int
    output_tokens: int
    cost: float
    chunks_read: int | None
    chunk_count: int | None
    attestation: AttestationStatus

    @property
    def icon(self) -> str:
        return ICONS.get(self.status, OTHER_ICON)


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

    @property
    def review_text(self) -> str | None:
        review = self.report.squad.review
        if review is None:
            return None
        verdict = f" ({review.verdict})" if review.verdict is not None else ""
        return f"{review.status}{verdict}"


def build_frame(report: SquadStatusReport, snapshot: SquadSnapshot, now: datetime) -> Frame:
    file_mode = report.squad.spec is not None
    rows = []
    for line in report.tasks:
        task = snapshot.tasks.get(line.task_id)
        elapsed: float | None = None
        input_tokens = output_tokens = 0
        cost = 0.0
        if task is not None:
            if task.started is not None and task.completed is not None:
                elapsed = (task.completed - task.started).total_seconds()
            elif task.started is not None and task.status is TaskStatus.IN_PROGRESS:
                elapsed = (now - task.started).total_seconds()
            input_tokens = task.usage.input_tokens
            output_tokens = task.usage.output_tokens
            cost = task.usage.cost
        rows.append(
            TaskRow(
                task_id=line.task_id,
                agent=line.agent,
                title=None if file_mode else line.title,
                status=line.status,
                blocked_by=line.blocked_by,
                elapsed_seconds=elapsed,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                cost=cost,
                chunks_read=line.chunks_read,
                chunk_count=line.chunk_count,
                attestation=line.attestation,
            )
        )
    return Frame(report=report, rows=tuple(rows))


READ_ATTEMPTS = 5
RETRY_PAUSE_SECONDS = 0.05


def _suspicious(frame: Frame) -> bool:
    """Something a file replaced in the middle of its read looks like for an instant."""
    return frame.spec is not None and any(
        row.attestation is AttestationStatus.INVALID or row.chunks_read is None
        for row in frame.rows
        if row.status is not TaskStatus.CANCELLED
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


# -- rendering -----------------------------------------------------------------------------------


def _chunks_text(row: TaskRow) -> str:
    read = "?" if row.chunks_read is None else str(row.chunks_read)
    return f"{read}/{row.chunk_count}"


def render_frame(frame: Frame) -> RenderableType:
    """The live view: squad status and review at the top, then one row per task."""
    report = frame.report
    header = Text()
    header.append("Squad ", style="bold")
    header.append(frame.squad_id, style="bold cyan")
    header.append("   status ")
    header.append(str(frame.status), style="bold")
    header.append("   review ")
    header.append(frame.review_text or "none", style="bold")
    summary = Text(
        f"{report.progress_text()} · elapsed {format_elapsed(report.elapsed_seconds)} · "
        f"cost ${report.cost:.4f}"
    )
    parts: list[RenderableType] = [header, summary]
    spec = frame.spec
    if spec is not None:
        parts.append(
            Text(
                f"Spec: {spec.bytes} bytes, {spec.chunk_count} chunks, SHA-256 {spec.sha256}",
                style="dim",
            )
        )
    if report.canonical_problem is not None:
        parts.append(
            Text(f"Canonical spec FAILS verification: {report.canonical_problem}", "bold red")
        )
    if report.squad.quarantine is not None:
        parts.append(Text(f"Quarantined: {report.squad.quarantine}", style="bold red"))

    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    table.add_column("", no_wrap=True)
    table.add_column("Task", no_wrap=True)
    table.add_column("Agent", no_wrap=True)
    table.add_column("Status", no_wrap=True)
    table.add_column("Elapsed", justify="right", no_wrap=True)
    table.add_column("Tokens in/out", justify="right", no_wrap=True)
    table.add_column("Cost", justify="right", no_wrap=True)
    if spec is not None:
        table.add_column("Read", no_wrap=True)
        table.add_column("Chunks", justify="right", no_wrap=True)
        table.add_column("Attestation", no_wrap=True)
    else:
        table.add_column("Title")
    for row in frame.rows:
        status = Text(str(row.status), style=_STATUS_STYLES.get(row.status, ""))
        if row.status is TaskStatus.BLOCKED and row.blocked_by:
            status.append(f" by {', '.join(row.blocked_by)}", style="dim")
        cells: list[RenderableType] = [
            Text(row.icon, style=_STATUS_STYLES.get(row.status, "")),
            row.task_id,
            row.agent,
            status,
            "-" if row.elapsed_seconds is None else format_elapsed(row.elapsed_seconds),
            f"{row.input_tokens}/{row.output_tokens}",
            f"${row.cost:.4f}",
        ]
        if spec is not None:
            cells += [
                ProgressBar(
                    total=float(row.chunk_count or 1),
                    completed=float(row.chunks_read or 0),
                    width=12,
                ),
                _chunks_text(row),
                Text(str(row.attestation), style=_ATTESTATION_STYLES[row.attestation]),
            ]
        else:
            cells.append(row.title or "")
        table.add_row(*cells)
    parts.append(table)
    return Group(*parts)


class PlainLines:
    """One stable line per change (see the module docstring); deterministic for a given
    sequence of frames unless ``timestamps`` prefixes each line with the clock's time."""

    def __init__(self, out: TextIO, *, clock: Clock | None = None) -> None:
        self._out = out
        self._clock = clock
        self._squad_key: tuple[Any, ...] | None = None
        self._task_keys: dict[str, tuple[Any, ...]] = {}

    def _emit(self, line: str) -> None:
        if self._clock is not None:
            line = f"{format_rfc3339_millis(self._clock.now())} {line}"
        self._out.write(line + "\n")
        self._out.flush()

    def show(self, frame: Frame) -> None:
        report = frame.report
        squad_key = (
            frame.status,
            frame.review_text,
            report.squad.quarantine,
            report.canonical_problem,
        )
        if squad_key != self._squad_key:
            self._squad_key = squad_key
            self._emit(squad_line(frame))
        for row in frame.rows:
            key = (row.status, row.chunks_read, row.attestation, row.blocked_by)
            if self._task_keys.get(row.task_id) != key:
                self._task_keys[row.task_id] = key
                self._emit(task_line(row))

    def notice(self, notice: Notice) -> None:
        first = notice.text.splitlines()[0] if notice.text else ""
        self._emit(f"[{notice.kind}] {first}")

    def message(self, text: str) -> None:
        self._emit(text)


def squad_line(frame: Frame) -> str:
    report = frame.report
    line = f"squad {frame.squad_id}: {frame.status}"
    if frame.review_text is not None:
        line += f", review {frame.review_text}"
    if report.squad.quarantine is not None:
        line += f", quarantined: {report.squad.quarantine}"
    if report.canonical_problem is not None:
        line += f", canonical spec FAILS: {report.canonical_problem}"
    return line


def task_line(row: TaskRow) -> str:
    line = f"task {row.task_id} ({row.agent}): {row.status}"
    if row.chunk_count is not None:
        line += f" chunks {_chunks_text(row)} attestation {row.attestation}"
    if row.status is TaskStatus.BLOCKED and row.blocked_by:
        line += f" blocked by: {', '.join(row.blocked_by)}"
    if row.status in ENDED_TASK_STATUSES:
        line += f" tokens {row.input_tokens}/{row.output_tokens} cost ${row.cost:.4f}"
        if row.elapsed_seconds is not None:
            line += f" took {format_elapsed(row.elapsed_seconds)}"
    return line


# -- where frames go -----------------------------------------------------------------------------


class FrameSink(Protocol):
    def show(self, frame: Frame) -> None: ...

    def notice(self, notice: Notice) -> None: ...

    def message(self, text: str) -> None: ...


class LiveSink:
    """The rich live table; notices and messages print above it."""

    def __init__(self, live: Live) -> None:
        self._live = live

    def show(self, frame: Frame) -> None:
        self._live.update(render_frame(frame), refresh=True)

    def notice(self, notice: Notice) -> None:
        first = notice.text.splitlines()[0] if notice.text else ""
        self._live.console.print(Text(f"[{notice.kind}] {first}", style="bold"))

    def message(self, text: str) -> None:
        self._live.console.print(Text(text))


class SilentSink:
    """``--json``: nothing until the one JSON object at the end."""

    def show(self, frame: Frame) -> None:
        return None

    def notice(self, notice: Notice) -> None:
        return None

    def message(self, text: str) -> None:
        return None


@contextlib.contextmanager
def open_sink(
    *, as_json: bool, out: TextIO | None = None, timestamps: Clock | None = None
) -> Iterator[FrameSink]:
    """Live on a terminal, plain lines otherwise, nothing with ``--json``."""
    stream = out if out is not None else sys.stdout
    if as_json:
        yield SilentSink()
        return
    if not stream.isatty():
        yield PlainLines(stream, clock=timestamps)
        return
    console = Console(file=stream, highlight=False)
    with Live(console=console, auto_refresh=False, transient=False) as live:
        yield LiveSink(live)


# -- watch ---------------------------------------------------------------------------------------


@attrs.define
class WatchState:
    last: Frame | None = None


def watch_loop(
    source: Callable[[], Frame],
    sink: FrameSink,
    *,
    interval: float,
    sleep: Callable[[float], None] = time.sleep,
    state: WatchState | None = None,
) -> Frame:
    """Show frames until the squad reaches review, done or failed; returns the last frame."""
    while True:
        frame = source()
        if state is not None:
            state.last = frame
        sink.show(frame)
        if frame.status in WATCH_STOP_STATUSES:
            return frame
        sleep(interval)


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value > 3600:
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most 3600 seconds: {text}")
    return value


def cmd_watch(args: argparse.Namespace, container: CliContainer) -> int:
    reader = container.status_reader()
    squad_id: str = args.squad_id if args.squad_id is not None else reader.newest_squad_id()
    clock = container.clock()
    source = FrameSource(reader=reader, store=container.store(), clock=clock, squad_id=squad_id)
    state = WatchState()
    stopped_because: str
    try:
        with open_sink(as_json=args.json, timestamps=clock if args.timestamps else None) as sink:
            frame = watch_loop(source, sink, interval=args.interval, state=state)
            stopped_because = str(frame.status)
            sink.message(f"squad {squad_id} reached {frame.status}; watch stopped")
    except KeyboardInterrupt:
        stopped_because = "interrupted"
        if not args.json:
            sys.stderr.write(f"pi-squad: watch of {squad_id} interrupted; the squad is unchanged\n")
    if args.json:
        document: dict[str, Any] = (
            {"squadId": squad_id} if state.last is None else state.last.report.document()
        )
        document["stoppedBecause"] = stopped_because
        emit_json(document)
    if stopped_because == "interrupted":
        return EXIT_INTERRUPTED
    return EXIT_REFUSED if stopped_because == str(SquadStatus.FAILED) else EXIT_OK


# -- the view ``run`` and ``demo`` show while they drive --------------------------------------


class DriveView:
    """Fed by the driver's snapshots; shows a frame when a status changed, or every
    ``interval`` seconds (attestation progress is only seen by reading the ledgers)."""

    def __init__(
        self,
        source: Callable[[], Frame],
        sink: FrameSink,
        *,
        interval: float = DEFAULT_INTERVAL_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._source = source
        self._sink = sink
        self._interval = interval
        self._monotonic = monotonic
        self._shown_key: tuple[Any, ...] | None = None
        self._shown_at: float | None = None

    def __call__(self, snapshot: SquadSnapshot) -> None:
        key = (
            snapshot.squad.status,
            tuple(sorted((task_id, t.status) for task_id, t in snapshot.tasks.items())),
        )
        now = self._monotonic()
        due = self._shown_at is None or now - self._shown_at >= self._interval
        if key != self._shown_key or due:
            self.refresh()
            self._shown_key = key

    def refresh(self) -> None:
        self._sink.show(self._source())
        self._shown_at = self._monotonic()

    def notice(self, notice: Notice) -> None:
        self._sink.notice(notice)


@contextlib.contextmanager
def drive_view(container: CliContainer, squad_id: str, *, as_json: bool) -> Iterator[DriveView]:
    """The watch view over a squad this process drives; the final frame is shown on exit."""
    source = FrameSource(
        reader=container.status_reader(),
        store=container.store(),
        clock=container.clock(),
        squad_id=squad_id,
    )
    with open_sink(as_json=as_json) as sink:
        view = DriveView(source, sink)
        yield view
        view.refresh()


AddCommand = Callable[
    [str, Callable[[argparse.Namespace, CliContainer], int], str], argparse.ArgumentParser
]


def add_watch_command(add: AddCommand) -> None:
    watch = add(
        "watch",
        cmd_watch,
        "Follow a squad live (the newest squad when no ID is given) until it reaches review, "
        "done or failed; read-only. Exit 0 at review or done, 1 if it failed, 130 on Ctrl-C. "
        "Plain lines when stdout is not a terminal; with --json one status object at the end.",
    )
    watch.add_argument("squad_id", metavar="SQUAD_ID", nargs="?")
    watch.add_argument(
        "--interval",
        type=_positive_seconds,
        default=DEFAULT_INTERVAL_SECONDS,
        metavar="S",
        help=f"seconds between reads (default {DEFAULT_INTERVAL_SECONDS:g})",
    )
    watch.add_argument(
        "--timestamps", action="store_true", help="prefix each plain line with the time"
    )
