"""Where watch frames go: a ``rich`` live table on a terminal, one stable plain line per change
otherwise (the format is in ``entrypoints.frame_render``), nothing with ``--json``."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any, Protocol, TextIO

import attrs
from rich.console import Console
from rich.live import Live
from rich.text import Text

from application.ports import Clock
from application.squads.scheduler import Notice
from domain.attestation.timestamps import format_rfc3339_millis
from entrypoints.frame_render import notice_line, render_frame, squad_line, task_line
from entrypoints.frames import Frame


class FrameSink(Protocol):
    def show(self, frame: Frame) -> None: ...

    def notice(self, notice: Notice) -> None: ...

    def message(self, text: str) -> None: ...


@attrs.define
class PlainLines:
    """A line when the squad's status, review state, quarantine or canonical verdict changes,
    or a task's status, chunks read, attestation state or blockers change; deterministic for a
    given sequence of frames unless ``clock`` prefixes each line with its time."""

    _out: TextIO
    _clock: Clock | None = attrs.field(default=None, kw_only=True)
    _squad_key: tuple[Any, ...] | None = attrs.field(default=None, init=False)
    _task_keys: dict[str, tuple[Any, ...]] = attrs.field(factory=dict, init=False)

    def _emit(self, line: str) -> None:
        if self._clock is not None:
            line = f"{format_rfc3339_millis(self._clock.now())} {line}"
        self._out.write(line + "\n")
        self._out.flush()

    def show(self, frame: Frame) -> None:
        report = frame.report
        squad_key = (
            frame.status,
            report.review_text,
            report.squad.quarantine,
            report.canonical_problem,
        )
        if squad_key != self._squad_key:
            self._squad_key = squad_key
            self._emit(squad_line(frame))
        for row in frame.rows:
            task = row.line
            key = (task.status, task.word, task.blocked_by)  # what the line shows of it
            if self._task_keys.get(task.task_id) != key:
                self._task_keys[task.task_id] = key
                self._emit(task_line(row, frame.squad_id))

    def notice(self, notice: Notice) -> None:
        self._emit(notice_line(notice))

    def message(self, text: str) -> None:
        self._emit(text)


@attrs.frozen
class LiveSink:
    """The rich live table; notices and messages print above it."""

    _live: Live

    def show(self, frame: Frame) -> None:
        self._live.update(render_frame(frame), refresh=True)

    def notice(self, notice: Notice) -> None:
        self._live.console.print(Text(notice_line(notice), style="bold"))

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
