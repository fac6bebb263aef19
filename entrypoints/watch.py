"""``pi-squad watch``: a squad's progress, live, read-only; the same view ``run`` shows.

A frame (``entrypoints.frames``) is read from the squad's status report and its committed task
records; watching never writes anything. On a terminal the frame is a ``rich`` live table,
otherwise each change is one plain line in a stable format (``entrypoints.frame_render``).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import attrs

from application.ports import SquadSnapshot
from application.squads.scheduler import Notice
from domain.squad.model import SquadStatus
from entrypoints.commands import AddCommand
from entrypoints.container import CliContainer
from entrypoints.frame_sinks import FrameSink, open_sink
from entrypoints.frames import Frame, FrameSource
from entrypoints.output import EXIT_OK, EXIT_REFUSED, emit_json

DEFAULT_INTERVAL_SECONDS = 1.0
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report Ctrl-C
WATCH_STOP_STATUSES = frozenset({SquadStatus.REVIEW, SquadStatus.DONE, SquadStatus.FAILED})
UNDRIVEN_GRACE_SECONDS = 5.0
"""How long a running squad may go without a driver before watch says so and stops: a driver
that is starting, or restarting after a crash, takes the lock within this."""
NO_DRIVER = "no_driver"


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
    monotonic: Callable[[], float] = time.monotonic,
    state: WatchState | None = None,
    undriven_grace: float = UNDRIVEN_GRACE_SECONDS,
) -> Frame:
    """Show frames until the squad reaches review, done or failed, or has been running with no
    process driving it for ``undriven_grace`` seconds (nothing would ever change); returns the
    last frame."""
    undriven_since: float | None = None
    while True:
        frame = source()
        if state is not None:
            state.last = frame
        sink.show(frame)
        if frame.status in WATCH_STOP_STATUSES:
            return frame
        if frame.report.undriven:
            undriven_since = monotonic() if undriven_since is None else undriven_since
            if monotonic() - undriven_since >= undriven_grace:
                return frame
        else:
            undriven_since = None
        sleep(interval)


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value > 3600:
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most 3600 seconds: {text}")
    return value


def _frame_source(container: CliContainer, squad_id: str) -> FrameSource:
    return FrameSource(
        reader=container.status_reader(),
        store=container.store(),
        clock=container.clock(),
        squad_id=squad_id,
    )


def cmd_watch(args: argparse.Namespace, container: CliContainer) -> int:
    squad_id: str = (
        args.squad_id if args.squad_id is not None else container.status_reader().newest_squad_id()
    )
    source = _frame_source(container, squad_id)
    clock = source.clock
    state = WatchState()
    stopped_because: str
    try:
        with open_sink(as_json=args.json, timestamps=clock if args.timestamps else None) as sink:
            frame = watch_loop(source, sink, interval=args.interval, state=state)
            if frame.report.undriven:
                stopped_because = NO_DRIVER
                sink.message(
                    f"squad {squad_id} is running but no process drives it, so nothing will "
                    f"change; continue it with: {frame.report.next_command()}"
                )
            else:
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
    return EXIT_REFUSED if stopped_because in {str(SquadStatus.FAILED), NO_DRIVER} else EXIT_OK


# -- the view ``run`` and ``demo`` show while they drive --------------------------------------


@attrs.define
class DriveView:
    """Fed by the driver's snapshots; shows a frame when a status changed, or every
    ``interval`` seconds (attestation progress is only seen by reading the ledgers)."""

    _source: Callable[[], Frame]
    _sink: FrameSink
    _interval: float = attrs.field(default=DEFAULT_INTERVAL_SECONDS, kw_only=True)
    _monotonic: Callable[[], float] = attrs.field(default=time.monotonic, kw_only=True)
    _shown_key: tuple[Any, ...] | None = attrs.field(default=None, init=False)
    _shown_at: float | None = attrs.field(default=None, init=False)

    @property
    def interval(self) -> float:
        return self._interval

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
    source = _frame_source(container, squad_id)
    with open_sink(as_json=as_json) as sink:
        view = DriveView(source, sink)
        yield view
        view.refresh()


def add_watch_command(add: AddCommand) -> None:
    watch = add(
        "watch",
        cmd_watch,
        "Follow a squad live (the newest squad when no ID is given) until it reaches review, "
        "done or failed; read-only. Exit 0 at review or done, 1 if it failed or no process "
        "drives it (it then says what to type), 130 on Ctrl-C. "
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
