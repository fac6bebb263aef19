"""How a watch frame looks: the ``rich`` live table for a terminal, and the stable plain lines
that scripts and the snapshot tests rely on:

    squad <id>: <status>[, review <state>][, quarantined: ...][, canonical spec FAILS: ...]
    task <id> (<agent>): <status>[ attestation <word>][ blocked by: a, b]
        (<word>: not started, reading n/N, valid, invalid: <reason>; domain/attestation/words.py)
        [ tokens <in>/<out> cost $<cost> took <elapsed>]   (the last part once a task ended)
        [ reason: <first line> (full text: pi-squad report <squad>)]   (failed or suspended)

In file mode titles and descriptions are spec content and never shown.
"""

from __future__ import annotations

import attrs
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from application.squads.scheduler import Notice
from application.squads.status import format_elapsed
from domain.attestation.words import ReadWord
from domain.squad.model import TaskStatus
from entrypoints.frames import Frame, TaskRow

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
    ReadWord.VALID: "green",
    ReadWord.INVALID: "bold red",
    ReadWord.READING: "yellow",
    ReadWord.NOT_STARTED: "dim",
    ReadWord.NOT_REQUIRED: "dim",
}


def _header(frame: Frame) -> list[RenderableType]:
    """Squad, status and review, the totals, then the spec and anything that is wrong."""
    report = frame.report
    title = Text()
    title.append("Squad ", style="bold")
    title.append(frame.squad_id, style="bold cyan")
    title.append("   status ")
    title.append(str(frame.status), style="bold")
    title.append("   review ")
    title.append(report.review_text or "none", style="bold")
    summary = Text(
        f"{report.progress_text()} · elapsed {format_elapsed(report.elapsed_seconds)} · "
        f"cost ${report.cost:.4f}"
    )
    parts: list[RenderableType] = [title, summary]
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
    return parts


# Dropped in this order, one at a time, while the table does not fit the terminal: each
# repeats something another column still shows (Chunks n/N, the totals line).
OPTIONAL_COLUMNS = ("Read", "Tokens in/out", "Cost")
# Status folds onto more lines; it is given at least this many cells before a column is dropped.
STATUS_MIN_WIDTH = 20
UNBOUNDED_WIDTH = 10_000


def _task_table(*, file_mode: bool, omit: tuple[str, ...], status_width: int | None) -> Table:
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    table.add_column("", no_wrap=True)
    table.add_column("Task", no_wrap=True)
    table.add_column("Agent", no_wrap=True)
    # Status is the one column that wraps: a long failure reason or blocker list folds onto
    # more lines instead of squeezing every column (and cutting the attestation) evenly.
    table.add_column("Status", overflow="fold", max_width=status_width)
    table.add_column("Elapsed", justify="right", no_wrap=True)
    for name in ("Tokens in/out", "Cost"):
        if name not in omit:
            table.add_column(name, justify="right", no_wrap=True)
    if file_mode:
        if "Read" not in omit:
            table.add_column("Read", no_wrap=True)
        table.add_column("Chunks", justify="right", no_wrap=True)
        table.add_column("Attestation", no_wrap=True)
    else:
        table.add_column("Title")
    return table


def _task_cells(row: TaskRow, *, file_mode: bool, omit: tuple[str, ...]) -> list[RenderableType]:
    line, usage = row.line, row.usage
    style = _STATUS_STYLES.get(line.status, "")
    status = Text(str(line.status), style=style)
    if line.status is TaskStatus.BLOCKED and line.blocked_by:
        status.append(f" by {', '.join(line.blocked_by)}", style="dim")
    if line.reason is not None:
        status.append(f": {line.reason}", style="dim")
    cells: list[RenderableType] = [
        Text(line.icon, style=style),
        line.task_id,
        line.agent,
        status,
        "-" if row.elapsed_seconds is None else format_elapsed(row.elapsed_seconds),
    ]
    if "Tokens in/out" not in omit:
        cells.append(f"{usage.input_tokens}/{usage.output_tokens}")
    if "Cost" not in omit:
        cells.append(f"${usage.cost:.4f}")
    if file_mode:
        if "Read" not in omit:
            cells.append(
                ProgressBar(
                    total=float(line.chunk_count or 1),
                    completed=float(line.chunks_read or 0),
                    width=12,
                )
            )
        cells += [
            line.chunks_text,
            Text(line.word.text, style=_ATTESTATION_STYLES[line.word.word]),
        ]
    else:
        cells.append(line.title)
    return cells


def _filled_table(frame: Frame, *, omit: tuple[str, ...], status_width: int | None) -> Table:
    file_mode = frame.spec is not None
    table = _task_table(file_mode=file_mode, omit=omit, status_width=status_width)
    for row in frame.rows:
        table.add_row(*_task_cells(row, file_mode=file_mode, omit=omit))
    return table


@attrs.frozen
class _TaskTable:
    """The task table, fitted to the terminal it is drawn on: the proof columns (Chunks,
    Attestation) and Status are never cut; optional columns give way first."""

    frame: Frame

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        # measured unbounded: Measurement.get clamps to the width it is given
        unbounded = options.update_width(UNBOUNDED_WIDTH)
        for dropped in range(len(OPTIONAL_COLUMNS) + 1):
            omit = OPTIONAL_COLUMNS[:dropped]
            trial = _filled_table(self.frame, omit=omit, status_width=STATUS_MIN_WIDTH)
            if Measurement.get(console, unbounded, trial).maximum <= options.max_width:
                yield _filled_table(self.frame, omit=omit, status_width=None)
                return
        # Too narrow for any table: the plain lines, which wrap and never cut a field.
        for row in self.frame.rows:
            yield Text(task_line(row, self.frame.squad_id))


def render_frame(frame: Frame) -> RenderableType:
    """The live view: squad status and review at the top, then one row per task."""
    return Group(*_header(frame), _TaskTable(frame))


def squad_line(frame: Frame) -> str:
    report = frame.report
    line = f"squad {frame.squad_id}: {frame.status}"
    if report.review_text is not None:
        line += f", review {report.review_text}"
    if report.squad.quarantine is not None:
        line += f", quarantined: {report.squad.quarantine}"
    if report.canonical_problem is not None:
        line += f", canonical spec FAILS: {report.canonical_problem}"
    return line


def task_line(row: TaskRow, squad_id: str) -> str:
    task, usage = row.line, row.usage
    line = f"task {task.task_id} ({task.agent}): {task.status}"
    if task.chunk_count is not None:
        line += f" {task.attestation_text}"
    if task.status is TaskStatus.BLOCKED and task.blocked_by:
        line += f" blocked by: {', '.join(task.blocked_by)}"
    if task.status in ENDED_TASK_STATUSES:
        line += f" tokens {usage.input_tokens}/{usage.output_tokens} cost ${usage.cost:.4f}"
        if row.elapsed_seconds is not None:
            line += f" took {format_elapsed(row.elapsed_seconds)}"
    if task.reason is not None:
        line += f" reason: {task.reason} (full text: pi-squad report {squad_id})"
    return line


def notice_line(notice: Notice) -> str:
    """``[<kind>] <first line of the notice>``."""
    first = notice.text.splitlines()[0] if notice.text else ""
    return f"[{notice.kind}] {first}"
