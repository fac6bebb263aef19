"""``pi-squad watch`` on a terminal: the real command in a pseudo-terminal of a fixed size while
the test changes the squad through the store, narrow terminals, legacy squads, and the view
``run`` shows."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from rich.console import Console

from application.squads.scheduler import Notice
from application.squads.status import SquadStatusReader
from domain.squad.model import TaskStatus
from entrypoints.frame_render import render_frame
from entrypoints.frame_sinks import PlainLines
from entrypoints.frames import Frame, FrameSource
from entrypoints.watch import DriveView
from tests.integration.operator_support import (
    SPEC_TEXT_MARKERS,
    PtyProcess,
    cli_environment,
    enter_review,
    finish_task,
    read_chunks,
    set_task,
)
from tests.integration.ops_support import publish_legacy
from tests.integration.watch_support import frame_source, needs_pty, running_world
from tests.pi_runtime_support import installed_pi_runtime
from tests.runtime_world import RuntimeWorld


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
        assert rows["design"].rstrip().endswith("reading 2/5")
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
        assert line.rstrip().endswith(("not started", "reading 2/5"))
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
    assert "task design (architect): in_progress attestation reading 2/5" in joined
    assert "task qa (qa): blocked attestation not started blocked by: build" in joined


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
