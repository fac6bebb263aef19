"""Squads in chosen states for the operator commands (``watch``, ``report``), on the real file
system, and the ``pi-squad`` command line run against them in a subprocess."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import signal
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs

from domain.squad.model import Review, ReviewStatus, SquadStatus, TaskStatus
from domain.usage import Usage
from tests.integration.cli_support import CLI, CliRun, run_command
from tests.runtime_world import RuntimeWorld
from tests.squads import multi_chunk_spec

T0 = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
TASK_IDS = ("build", "design", "qa")
# Text only the demo-like spec holds: no operator view may show it.
SPEC_TEXT_MARKERS = ("verify the spec", "Task design", "Task build", "Ship a")


def demo_like_world(base: Path) -> RuntimeWorld:
    """A published file squad shaped like the demo: three tasks over a four-chunk spec."""
    world = RuntimeWorld(base=base, spec=multi_chunk_spec(4))
    world.publish()
    return world


def read_chunks(world: RuntimeWorld, task_id: str, indices: Sequence[int]) -> None:
    """Deliver some chunks to a task through the real child role, as a child would."""
    spawned_at = world.clock.now()
    calls = world.child_reads(task_id, indices)
    # A parent watching this child records the same reads (grounding).
    world.record_parent_observations(task_id, calls, spawned_at=spawned_at, indices=indices)


def set_task(world: RuntimeWorld, task_id: str, **changes: Any) -> None:
    with world.store.transaction(world.squad_id) as tx:
        tx.put_task(attrs.evolve(tx.tasks[task_id], **changes))


def start_task(world: RuntimeWorld, task_id: str, *, minute: int = 0) -> None:
    set_task(
        world,
        task_id,
        status=TaskStatus.IN_PROGRESS,
        started=T0 + timedelta(minutes=minute),
    )


def finish_task(
    world: RuntimeWorld, task_id: str, *, output: str, minute: int = 0, seconds: int = 42
) -> None:
    """Attest the task (every chunk through the child role, watched by the parent) and record
    it done."""
    world.attest(task_id, observed=True)
    started = T0 + timedelta(minutes=minute)
    set_task(
        world,
        task_id,
        status=TaskStatus.DONE,
        started=started,
        completed=started + timedelta(seconds=seconds),
        output=output,
        usage=Usage(input_tokens=1200 + len(task_id), output_tokens=34, cost=0.0125, turns=2),
    )


def enter_review(world: RuntimeWorld) -> None:
    with world.store.transaction(world.squad_id) as tx:
        squad = tx.squad
        review = Review(status=ReviewStatus.PENDING, requested_at=T0 + timedelta(hours=1))
        tx.put_squad(attrs.evolve(squad, status=SquadStatus.REVIEW, review=review))


def set_squad_status(world: RuntimeWorld, status: SquadStatus) -> None:
    with world.store.transaction(world.squad_id) as tx:
        tx.put_squad(attrs.evolve(tx.squad, status=status))


def finished_world(base: Path, outputs: Mapping[str, str] | None = None) -> RuntimeWorld:
    """Every task attested and done, the squad awaiting review: what the demo leaves."""
    world = demo_like_world(base)
    chosen = outputs or {}
    for minute, task_id in enumerate(("design", "build", "qa")):
        text = chosen.get(task_id, f"{task_id} finished; tests pass.\n")
        finish_task(world, task_id, output=text, minute=minute)
    enter_review(world)
    return world


def cli_environment(world: RuntimeWorld, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"PI_SQUAD_ROOT", "PI_CODING_AGENT_DIR", "COLUMNS", "LINES"}
    }
    home = world.base / "home"
    home.mkdir(exist_ok=True)
    env.update(
        HOME=str(home),
        PI_SQUAD_ROOT=world.root,
        PI_CODING_AGENT_DIR=str(home / ".pi" / "agent"),
        PYTHONDONTWRITEBYTECODE="1",
    )
    env.update(extra)
    return env


def run_operator_cli(
    world: RuntimeWorld, arguments: Sequence[str], *, cwd: Path | None = None
) -> CliRun:
    return run_command([*CLI, *arguments], cwd=cwd or world.base, env=cli_environment(world))


def file_states(*directories: Path) -> dict[str, tuple[str, int, int]]:
    """Every entry under ``directories``: (SHA-256 of a file's bytes or "dir"/"link", mode,
    mtime_ns). Equal before and after a command means it wrote, created and removed nothing."""
    states: dict[str, tuple[str, int, int]] = {}
    for directory in directories:
        for path in [directory, *sorted(directory.rglob("*"))]:
            status = path.lstat()
            if path.is_symlink():
                content = f"link:{os.readlink(path)}"
            elif path.is_dir():
                content = "dir"
            else:
                content = hashlib.sha256(path.read_bytes()).hexdigest()
            states[str(path)] = (content, status.st_mode, status.st_mtime_ns)
    return states


ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][0-9A-Za-z]")


def strip_ansi(text: str) -> str:
    return ANSI_ESCAPE.sub("", text)


class PtyProcess:
    """A command whose stdin, stdout and stderr are a pseudo-terminal of a fixed size.

    Everything the command writes is collected by a reader thread; ``wait_for`` polls it.
    POSIX only (the ``pty`` module).
    """

    def __init__(
        self,
        arguments: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        columns: int = 120,
        lines: int = 40,
    ) -> None:
        import fcntl
        import pty
        import termios

        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))
        environment = {
            **env,
            "TERM": "xterm-256color",
            "COLUMNS": str(columns),
            "LINES": str(lines),
        }
        environment.pop("NO_COLOR", None)
        self.process = subprocess.Popen(
            [*CLI, *arguments],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=environment,
            cwd=cwd,
            close_fds=True,
            start_new_session=True,
        )
        os.close(slave)
        self._master = master
        self._data = bytearray()
        self._guard = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self._master, 65536)
            except OSError:  # EIO once the last writer closed the terminal
                break
            if not chunk:
                break
            with self._guard:
                self._data.extend(chunk)

    def raw(self) -> str:
        with self._guard:
            return bytes(self._data).decode("utf-8", errors="replace")

    def screen_text(self) -> str:
        """Everything written, escape sequences removed (every frame, one after another)."""
        return strip_ansi(self.raw())

    def wait_for(self, predicate: Callable[[str], bool], timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.screen_text()
            if predicate(text):
                return text
            if self.process.poll() is not None:
                self._reader.join(timeout=5)
                text = self.screen_text()
                assert predicate(text), f"the process exited first; it wrote:\n{text}"
                return text
            time.sleep(0.05)
        raise AssertionError(f"timed out; the terminal shows:\n{self.screen_text()}")

    def wait(self, timeout: float = 30.0) -> int:
        code = self.process.wait(timeout=timeout)
        self._reader.join(timeout=5)
        return code

    def interrupt(self) -> None:
        self.process.send_signal(signal.SIGINT)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self._reader.join(timeout=5)
        with contextlib.suppress(OSError):
            os.close(self._master)
