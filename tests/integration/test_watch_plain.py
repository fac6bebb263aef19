"""``pi-squad watch`` without a terminal: stable plain lines pinned by snapshots, exit codes, never
a write, and reads retried while a file is replaced."""

from __future__ import annotations

import io
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from application.ports import ReadFailure, SquadSnapshot, StableReadError
from application.spec_reads import AttestationStatus
from application.squads.status import SquadStatusReader
from domain.errors import ErrorCode, SquadOperationError
from domain.squad.model import SquadStatus, TaskStatus
from entrypoints.frame_sinks import PlainLines
from entrypoints.frames import FrameSource
from entrypoints.watch import watch_loop
from tests.integration.cli_support import CLI
from tests.integration.operator_support import (
    SPEC_TEXT_MARKERS,
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
from tests.integration.watch_support import INTERRUPTED, check_snapshot, frame_source, running_world
from tests.runtime_world import RuntimeWorld


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
