"""``pi-squad watch``: live on a terminal, stable lines otherwise, read-only, exits at review.

The terminal tests run the real command in a pseudo-terminal of a fixed size while the test
changes the squad through the store; the plain mode is pinned by snapshots checked in under
``tests/integration/snapshots/`` (set ``UPDATE_SNAPSHOTS=1`` to rewrite them after a deliberate
format change).
"""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from application.ports import ReadFailure, SquadSnapshot, StableReadError
from application.spec_reads import AttestationStatus
from application.squads.scheduler import Notice
from application.squads.status import SquadStatusReader
from domain.errors import ErrorCode, SquadOperationError
from domain.squad.model import SquadStatus, TaskStatus
from entrypoints.frame_render import render_frame
from entrypoints.frame_sinks import PlainLines
from entrypoints.frames import Frame, FrameSource
from entrypoints.watch import DriveView, watch_loop
from tests.integration.cli_support import CLI
from tests.integration.operator_support import (
    PtyProcess,
    cli_environment,
    demo_like_world,
    enter_review,
    file_states,
    finish_task,
    read_chunks,
    run_operator_cli,
    set_squad_status,
    set_task,
    start_task,
)
from tests.integration.ops_support import publish_legacy
from tests.pi_runtime_support import installed_pi_runtime
from tests.runtime_world import RuntimeWorld

SNAPSHOTS = Path(__file__).parent / "snapshots"
INTERRUPTED = 130
SPEC_TEXT_MARKERS = ("verify the spec", "Task design", "Task build", "Ship a")
needs_pty = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")


def check_snapshot(name: str, actual: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8", newline="\n")
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, f"{name} differs; UPDATE_SNAPSHOTS=1 rewrites it"


def running_world(base: Path) -> RuntimeWorld:
    """design in progress with two of five chunks read; build and qa blocked behind it."""
    world = demo_like_world(base)
    start_task(world, "design")
    read_chunks(world, "design", [0, 3])
    return world


def frame_source(world: RuntimeWorld) -> FrameSource:
    reader = SquadStatusReader(store=world.store, auditor=world.auditor, clock=world.clock)
    return FrameSource(reader=reader, store=world.store, clock=world.clock, squad_id=world.squad_id)


# -- plain lines ---------------------------------------------------------------------------------


def test_plain_lines_follow_a_squad_to_review_snapshot(tmp_path: Path) -> None:
    world = demo_like_world(tmp_path)
    steps: list[Callable[[], None]] = [
        lambda: start_task(world, "design"),
        lambda: read_chunks(world, "design", [4, 0]),
        lambda: None,  # nothing changed: nothing printed
        lambda: read_chunks(world, "design", [1, 2, 3]),
        lambda: finish_task(world, "design", output="design ok", minute=0, seconds=75),
        lambda: set_task(world, "build", status=TaskStatus.PENDING),
        lambda: start_task(world, "build", minute=2),
        lambda: finish_task(world, "build", output="build ok", minute=2, seconds=3725),
        lambda: set_task(world, "qa", status=TaskStatus.SUSPENDED),
        lambda: set_squad_status(world, SquadStatus.PAUSED),
        lambda: set_squad_status(world, SquadStatus.RUNNING),
        lambda: start_task(world, "qa", minute=5),
        lambda: finish_task(world, "qa", output="qa ok", minute=5, seconds=9),
        lambda: enter_review(world),
    ]
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        steps.pop(0)()

    out = io.StringIO()
    final = watch_loop(frame_source(world), PlainLines(out), interval=0.5, sleep=sleep)

    assert final.status is SquadStatus.REVIEW
    assert steps == []
    assert sleeps == [0.5] * 14
    check_snapshot("watch_plain_to_review.txt", out.getvalue())
    for marker in SPEC_TEXT_MARKERS:
        assert marker not in out.getvalue()


def test_the_watch_command_without_a_terminal_prints_the_plain_lines_snapshot(
    tmp_path: Path,
) -> None:
    world = demo_like_world(tmp_path)
    for minute, task_id in enumerate(("design", "build", "qa")):
        finish_task(world, task_id, output=f"{task_id} ok", minute=minute)
    enter_review(world)

    named = run_operator_cli(world, ["watch", world.squad_id])
    newest = run_operator_cli(world, ["watch"])

    assert named.returncode == 0, named.stderr
    assert named.stderr == ""
    check_snapshot("watch_plain_at_review.txt", named.stdout)
    assert newest.stdout == named.stdout


def test_timestamps_prefix_each_plain_line(tmp_path: Path) -> None:
    world = demo_like_world(tmp_path)
    enter_review(world)

    run = run_operator_cli(world, ["watch", "--timestamps"])

    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == 5
    for line in lines:
        assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (squad|task) ", line), line


def test_watch_exits_1_when_the_squad_failed_and_json_is_one_object(tmp_path: Path) -> None:
    world = running_world(tmp_path)
    set_squad_status(world, SquadStatus.FAILED)

    plain = run_operator_cli(world, ["watch", world.squad_id])
    as_json = run_operator_cli(world, ["watch", world.squad_id, "--json"])

    assert plain.returncode == 1
    assert plain.stdout.splitlines()[-1] == f"squad {world.squad_id} reached failed; watch stopped"
    assert as_json.returncode == 1
    document = as_json.json()
    assert document["stoppedBecause"] == "failed"
    assert document["status"] == "failed"
    design = next(t for t in document["tasks"] if t["taskId"] == "design")
    assert design["chunksRead"] == 2


@pytest.mark.parametrize("terminal", [False, True], ids=["plain", "terminal"])
def test_watch_never_writes_and_ctrl_c_leaves_the_squad_untouched(
    tmp_path: Path, terminal: bool
) -> None:
    if terminal and sys.platform == "win32":
        pytest.skip("pseudo-terminals are POSIX")
    world = running_world(tmp_path)
    before = file_states(Path(world.root))
    arguments = ["watch", world.squad_id, "--interval", "0.1"]

    if terminal:
        process = PtyProcess(arguments, env=cli_environment(world), cwd=world.base)
        try:
            process.wait_for(lambda text: "qa" in text and "2/5" in text)
            process.interrupt()
            code = process.wait()
        finally:
            process.close()
        assert "watch of ship-a interrupted; the squad is unchanged" in process.screen_text()
    else:
        popen = subprocess.Popen(
            [*CLI, *arguments],
            env=cli_environment(world),
            cwd=world.base,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        assert popen.stdout is not None
        first = [popen.stdout.readline() for _ in range(4)]
        popen.send_signal(signal.SIGINT)
        rest, stderr = popen.communicate(timeout=30)
        code = popen.returncode
        assert first[0] == f"squad {world.squad_id}: running\n"
        assert rest == ""
        assert (
            stderr == f"pi-squad: watch of {world.squad_id} interrupted; the squad is unchanged\n"
        )

    assert code == INTERRUPTED
    assert file_states(Path(world.root)) == before


class FlakyStore:
    """The world's store, except that the first ``failures`` snapshots are refused as a file
    replaced in the middle of its read would be."""

    def __init__(self, world: RuntimeWorld, failures: int) -> None:
        self._store = world.store
        self.failures = failures
        self.root = world.root

    def snapshot(self, squad_id: str) -> SquadSnapshot:
        if self.failures > 0:
            self.failures -= 1
            raise StableReadError(ReadFailure.CHANGED, "task.json", "replaced while read")
        return self._store.snapshot(squad_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


@pytest.mark.parametrize("failures", [1, 4])
def test_a_read_refused_while_a_file_is_replaced_is_retried(tmp_path: Path, failures: int) -> None:
    world = running_world(tmp_path)
    store = FlakyStore(world, failures)
    pauses: list[float] = []
    reader = SquadStatusReader(store=world.store, auditor=world.auditor, clock=world.clock)
    source = FrameSource(
        reader=reader, store=store, clock=world.clock, squad_id=world.squad_id, pause=pauses.append
    )

    frame = source()

    assert [row.line.chunks_read for row in frame.rows] == [0, 2, 0]
    assert pauses == [0.05] * failures


def test_a_read_refused_every_time_is_one_coded_error(tmp_path: Path) -> None:
    world = running_world(tmp_path)
    reader = SquadStatusReader(store=world.store, auditor=world.auditor, clock=world.clock)
    source = FrameSource(
        reader=reader,
        store=FlakyStore(world, 99),
        clock=world.clock,
        squad_id=world.squad_id,
        pause=lambda _seconds: None,
    )

    with pytest.raises(SquadOperationError) as caught:
        source()

    assert caught.value.code == ErrorCode.OPERATION_REFUSED
    assert caught.value.message == (
        f"cannot read squad 'ship-a' under {world.root}: task.json: changed while it was read: "
        "replaced while read; retry, and if it persists run `pi-squad verify` on the squad"
    )


def test_an_attestation_that_looks_invalid_is_read_again_before_it_is_believed(
    tmp_path: Path,
) -> None:
    world = running_world(tmp_path)
    attestation = world.attestation_path("design")
    finish_task(world, "design", output="ok")
    good = attestation.read_bytes()
    attestation.write_bytes(b"{")  # as if caught half-way (it never is: writes are atomic)
    pauses: list[float] = []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        attestation.write_bytes(good)

    reader = SquadStatusReader(store=world.store, auditor=world.auditor, clock=world.clock)
    source = FrameSource(
        reader=reader, store=world.store, clock=world.clock, squad_id=world.squad_id, pause=pause
    )

    frame = source()

    assert pauses == [0.05]
    design = next(row.line for row in frame.rows if row.line.task_id == "design")
    assert design.attestation is AttestationStatus.VALID


# -- the live view -------------------------------------------------------------------------------


@needs_pty
def test_watch_renders_a_running_squad_live_and_exits_when_it_enters_review(
    tmp_path: Path,
) -> None:
    world = running_world(tmp_path)
    process = PtyProcess(
        ["watch", world.squad_id, "--interval", "0.1"],
        env=cli_environment(world),
        cwd=world.base,
        # wide enough for every column whatever the wall clock makes "Elapsed"; narrow
        # terminals: test_a_narrow_terminal_folds_status_and_keeps_the_proof_columns_whole
        columns=160,
        lines=30,
    )
    try:
        # The terminal is read while the live view redraws, so wait for a frame whose first
        # line and table header are drawn as well as its last row: a half-redrawn screen is
        # not a frame.
        running = process.wait_for(
            lambda text: (
                f"Squad {world.squad_id}" in text
                and "Attestation" in text
                and "qa" in text
                and "2/5" in text
                and "blocked by build" in text
            )
        )
        assert "\x1b[" in process.raw()  # styled for a terminal, not plain lines
        assert f"Squad {world.squad_id}   status running   review none" in running
        rows = {line.split("│")[1].strip(): line for line in running.splitlines() if "│" in line}
        assert rows["design"].startswith("⏳")
        assert "in_progress" in rows["design"]
        assert "2/5" in rows["design"]
        assert "missing" in rows["design"]
        assert rows["build"].startswith("◻")
        assert "blocked by design" in rows["build"]
        assert rows["qa"].startswith("◻")
        for header in ("Task", "Agent", "Status", "Elapsed", "Tokens in/out", "Cost", "Chunks"):
            assert header in running
        assert "Attestation" in running

        for minute, task_id in enumerate(("design", "build", "qa")):
            finish_task(world, task_id, output=f"{task_id} ok", minute=minute)
        process.wait_for(lambda text: "0/5" not in text.rsplit("Squad ", 1)[-1])
        enter_review(world)
        code = process.wait(timeout=30)
    finally:
        process.close()

    assert code == 0
    screen = process.screen_text()
    final = screen.rsplit(f"Squad {world.squad_id}", 1)[-1]
    assert "status review   review pending" in final
    assert "3/3 tasks done" in final
    assert final.count("✓") == 3
    assert final.count("5/5") == 3
    # printed above the live table as the watch ends
    assert f"squad {world.squad_id} reached review; watch stopped" in screen
    for marker in SPEC_TEXT_MARKERS:
        assert marker not in screen


def rendered(frame: Frame) -> str:
    console = Console(record=True, width=120, file=io.StringIO(), color_system=None)
    console.print(render_frame(frame))
    return console.export_text()


def test_the_live_view_of_a_file_squad_never_shows_spec_text(tmp_path: Path) -> None:
    world = running_world(tmp_path)

    text = rendered(frame_source(world)())

    lines = text.splitlines()
    assert lines[0] == "Squad ship-a   status running   review none"
    assert lines[1].startswith("0/3 tasks done · elapsed ")
    assert lines[2].startswith("Spec: 132081 bytes, 5 chunks, SHA-256 ")
    header = next(line for line in lines if "┃" in line)
    rows = {line.split("│")[1].strip(): line for line in lines if "│" in line}
    assert set(rows) == {"build", "design", "qa"}
    assert "Attestation" in header
    assert "Title" not in header
    assert rows["build"].startswith("◻")
    assert "2/5" in rows["design"]
    for marker in SPEC_TEXT_MARKERS:
        assert marker not in text


@pytest.mark.parametrize(
    ("width", "dropped"),
    [(160, ()), (100, ("Read", "Tokens in/out")), (80, ("Read", "Tokens in/out", "Cost"))],
)
def test_a_narrow_terminal_folds_status_and_keeps_the_proof_columns_whole(
    tmp_path: Path, width: int, dropped: tuple[str, ...]
) -> None:
    world = running_world(tmp_path)
    set_task(world, "qa", status=TaskStatus.FAILED, error="x" * 70)
    frame = frame_source(world)()
    console = Console(record=True, width=width, file=io.StringIO(), color_system=None)

    console.print(render_frame(frame))
    lines = console.export_text().splitlines()

    assert all(len(line.rstrip()) <= width for line in lines)
    header = next(line for line in lines if "┃" in line)
    titles = [cell.strip() for cell in header.split("┃")]
    for kept in ("Task", "Agent", "Status", "Elapsed", "Chunks", "Attestation"):
        assert kept in titles
    for optional in ("Read", "Tokens in/out", "Cost"):
        assert (optional in titles) is (optional not in dropped)
    by_task = {line.split("│")[1].strip(): line for line in lines if "│" in line}
    by_task.pop("")  # continuation lines of the folded reason
    assert set(by_task) == {"build", "design", "qa"}
    for line in by_task.values():
        assert line.rstrip().endswith("missing")
    assert "blocked by design" in by_task["build"]
    # the reason is folded onto continuation lines, never cut
    status_column = titles.index("Status")
    folded = "".join(line.split("│")[status_column].strip() for line in lines if "│" in line)
    assert "x" * 70 in folded


def test_a_terminal_too_narrow_for_any_table_gets_the_plain_lines(tmp_path: Path) -> None:
    world = running_world(tmp_path)
    frame = frame_source(world)()
    console = Console(record=True, width=60, file=io.StringIO(), color_system=None)

    console.print(render_frame(frame))
    text = console.export_text()

    assert "┃" not in text
    joined = " ".join(text.split())  # rich wraps at spaces
    assert "task design (architect): in_progress chunks 2/5 attestation missing" in joined
    assert "task qa (qa): blocked chunks 0/5 attestation missing blocked by: build" in joined


def test_the_live_view_of_a_legacy_squad_shows_titles_and_no_chunks(tmp_path: Path) -> None:
    world = RuntimeWorld(base=tmp_path, spec=b"")
    squad_id = publish_legacy(world)
    reader = SquadStatusReader(store=world.store, auditor=world.auditor, clock=world.clock)
    source = FrameSource(reader=reader, store=world.store, clock=world.clock, squad_id=squad_id)

    frame = source()
    text = rendered(frame)
    plain = io.StringIO()
    PlainLines(plain).show(frame)

    header = next(line for line in text.splitlines() if "┃" in line)
    rows = {line.split("│")[1].strip(): line for line in text.splitlines() if "│" in line}
    assert "Title" in header
    assert "Chunks" not in header
    assert "Build the API" in rows["api"]
    assert plain.getvalue() == (
        "squad legacy-squad: running\n"
        "task api (backend): pending\n"
        "task ui (backend): blocked blocked by: api\n"
    )


# -- the view ``run`` shows ----------------------------------------------------------------------


class RecordingSink:
    def __init__(self) -> None:
        self.frames: list[Frame] = []
        self.notices: list[str] = []

    def show(self, frame: Frame) -> None:
        self.frames.append(frame)

    def notice(self, notice: Notice) -> None:
        self.notices.append(notice.text)

    def message(self, text: str) -> None:
        self.notices.append(text)


def test_the_drive_view_redraws_on_a_status_change_and_otherwise_once_per_interval(
    tmp_path: Path,
) -> None:
    world = running_world(tmp_path)
    sink = RecordingSink()
    now = [0.0]
    view = DriveView(frame_source(world), sink, interval=1.0, monotonic=lambda: now[0])

    def tick(seconds: float) -> None:
        now[0] += seconds
        view(world.store.snapshot(world.squad_id))

    tick(0.0)  # the first snapshot always draws
    tick(0.2)
    tick(0.2)
    assert len(sink.frames) == 1
    set_task(world, "build", status=TaskStatus.PENDING)
    tick(0.2)  # a status changed: drawn at once
    assert len(sink.frames) == 2
    read_chunks(world, "design", [1])
    tick(0.5)
    assert len(sink.frames) == 2
    tick(0.5)  # a second since the last frame: chunk progress shows
    assert len(sink.frames) == 3
    assert sink.frames[-1].rows[1].line.chunks_read == 3
    view.notice(
        Notice(kind="review_required", squad_id=world.squad_id, text="awaiting review\nmore")
    )
    assert sink.notices == ["awaiting review\nmore"]


@pytest.mark.realpi
@pytest.mark.slow
@needs_pty
def test_watch_follows_the_real_demo_live_and_run_shows_the_same_view(tmp_path: Path) -> None:
    """The demo drives a squad over real Pi in one process (itself on a terminal, so it shows
    the live view); ``watch`` follows the same squad from another terminal until review."""
    installed_pi_runtime()
    workspace = tmp_path / "demo"
    root = workspace / "root"
    env = {k: v for k, v in os.environ.items() if k not in {"PI_SQUAD_ROOT", "PI_CODING_AGENT_DIR"}}
    env["HOME"] = str(tmp_path / "home")
    demo = PtyProcess(["demo", "--workspace", str(workspace)], env=env, cwd=tmp_path)
    try:
        published = demo.wait_for(lambda text: "published squad " in text, timeout=60)
        squad_id = published.split("published squad ", 1)[1].split(":", 1)[0]
        watch = PtyProcess(
            ["watch", squad_id, "--interval", "0.2"],
            env={**env, "PI_SQUAD_ROOT": str(root)},
            cwd=tmp_path,
        )
        try:
            watch_code = watch.wait(timeout=120)
        finally:
            watch.close()
        demo_code = demo.wait(timeout=120)
    finally:
        demo.close()

    assert watch_code == 0, watch.screen_text()
    watched = watch.screen_text()
    assert "status running" in watched
    final = watched.rsplit(f"Squad {squad_id}", 1)[-1]
    assert "status review" in final
    assert final.count("✓") == 4
    assert final.count("valid") == 4
    assert demo_code == 0, demo.screen_text()
    driven = demo.screen_text()
    assert f"Squad {squad_id}" in driven
    assert "Tokens in/out" in driven
    assert driven.rsplit(f"Squad {squad_id}", 1)[-1].count("✓") == 4
    assert f"squad {squad_id} stopped: review" in driven
