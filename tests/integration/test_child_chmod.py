"""A child's ``chmod`` stops neither the driver nor ``status`` and ``verify`` (issue 28).

Kernel isolation governs writes, not modes: a child (of the operator's own user) can ``chmod
000`` anything in its task's ledger directory. For a non-root operator that made the parent's
reads fail: ``status``, ``verify`` and ``run`` ended in ``IO_FAILED``, or a done task's proof
read as invalid and the task was reopened. The parent owns those entries and gives itself back
its access (``FileSystem.reclaim_access``), never through a link.

Root ignores modes, so these tests act as a non-root operator: the squad is handed to
``nobody`` and the CLI runs under ``setpriv`` (util-linux), the driver in a forked process that
drops to that user. Run as a non-root user, they run as that user directly.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import pytest

from application.squads.scheduler import Scheduler
from domain.squad.model import TaskStatus
from tests.integration.ops_support import CHAIN_SPEC, finish
from tests.runtime_world import RuntimeWorld, make_world

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX modes, fork")

NOBODY = 65534
ROOT = os.geteuid() == 0
CLI = (sys.executable, "-m", "entrypoints.cli")


@attrs.frozen
class Operator:
    """A squad with ``design`` accepted and ``build`` running, owned by a non-root operator."""

    world: RuntimeWorld
    scheduler: Scheduler

    def path(self, which: str) -> str:
        layout = self.world.layout()
        session = self.world.task("design").session
        assert session is not None
        return {
            "ledger directory": layout.ledger_dir("design"),
            "attestation": self.world.ledger_file("design"),
            "progress": self.world.ledger_file("design", "spec-read-state.json"),
            "session directory": layout.session_dir("design"),
            "session file": session.file,
        }[which]

    def cli(self, *arguments: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PI_SQUAD_")}
        env.update(PI_SQUAD_ROOT=self.world.root, HOME=str(self.world.base / "home"))
        return subprocess.run(
            [*as_operator(), *CLI, *arguments],
            env=env,
            cwd=self.world.base,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )


def as_operator() -> list[str]:
    """The command prefix that runs a process as the non-root operator."""
    if not ROOT:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("needs setpriv (util-linux) to act as a non-root operator")
    return [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


def in_operator_process(action: Callable[[], object]) -> object:
    """``action``'s JSON-able result, computed in a forked process running as the operator;
    an exception there fails the test with its traceback."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the forked child reports through the pipe
        os.close(reader)
        try:
            if ROOT:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            answer = {"ok": action()}
        except BaseException:
            answer = {"error": traceback.format_exc()}
        os.write(writer, json.dumps(answer, default=str).encode())
        os._exit(0)
    os.close(writer)
    chunks = []
    while chunk := os.read(reader, 1 << 16):
        chunks.append(chunk)
    os.close(reader)
    os.waitpid(pid, 0)
    answer = json.loads(b"".join(chunks))
    assert "error" not in answer, answer["error"]
    return answer["ok"]


def hand_over(base: Path) -> None:
    """Everything under ``base`` to the operator, as if the operator had made it."""
    if not ROOT:
        return
    for directory, names, files in os.walk(base):
        for name in (*names, *files):
            os.lchown(os.path.join(directory, name), NOBODY, NOBODY)
    os.chown(base, NOBODY, NOBODY)


@pytest.fixture
def operator() -> Iterator[Operator]:
    # Not pytest's tmp_path: its parents are private to the user running the tests.
    base = Path(tempfile.mkdtemp(prefix="pi-squad-operator-"))
    try:
        os.chmod(base, 0o755)
        (base / "home").mkdir()
        world = make_world("disk", base, CHAIN_SPEC)
        world.publish()
        scheduler = world.scheduler()
        scheduler.reconcile()
        finish(world, scheduler, "design")
        assert world.task("design").status is TaskStatus.DONE
        hand_over(base)
        yield Operator(world, scheduler)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def owner_bits(path: str) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode) & 0o700


TARGETS = ["ledger directory", "attestation", "progress", "session directory", "session file"]


@pytest.mark.parametrize("which", TARGETS)
def test_status_and_verify_answer_after_a_child_chmods_its_ledger(
    operator: Operator, which: str
) -> None:
    path = operator.path(which)
    os.chmod(path, 0)  # what the child does (it runs as the operator)
    squad_id = operator.world.squad_id
    for command in ("status", "verify"):
        answered = operator.cli(command, squad_id, "--json")
        assert answered.returncode == 0, (command, answered.stdout, answered.stderr)
        tasks = {t["taskId"]: t for t in json.loads(answered.stdout)["tasks"]}
        assert tasks["design"]["attestation"] == "valid", (command, tasks["design"])
    if which != "progress":  # a valid attestation's audit never reads the progress file
        assert owner_bits(path) & 0o600 == 0o600, "the parent took back its access"


@pytest.mark.parametrize("which", TARGETS)
def test_the_driver_keeps_a_done_task_done_after_a_child_chmods_its_ledger(
    operator: Operator, which: str
) -> None:
    path = operator.path(which)
    os.chmod(path, 0)
    world, scheduler = operator.world, operator.scheduler

    def reconcile() -> str:
        scheduler.reconcile()
        return str(world.task("design").status)

    assert in_operator_process(reconcile) == "done"


def test_a_chmodded_task_lock_does_not_stop_settlement(operator: Operator) -> None:
    """Settling an ungrounded attestation takes the task lock: a lock file (and directory) made
    unreadable by the child is taken back, and the task rejected as it should be."""
    world, scheduler = operator.world, operator.scheduler
    build = world.runtime.latest("build")
    build.bind(world.session_of("build"))
    scheduler.pump()
    document = json.loads(world.read_file(world.ledger_file("design")))
    document["taskId"] = "build"
    world.fs.write_atomic(world.ledger_file("build"), json.dumps(document).encode())
    ledger = world.layout().ledger_dir("build")
    lock = f"{ledger}/.spec-read.lock"
    Path(lock).touch()
    hand_over(world.base)
    os.chmod(lock, 0)
    os.chmod(ledger, 0)

    def settle() -> list[str]:
        build.say("All done.")
        build.settle(tool_calls=0)
        scheduler.pump()
        history = world.store.messages(world.squad_id, "build")
        return [m.text for m in history if m.text.startswith("Completion rejected")]

    rejections = in_operator_process(settle)
    assert isinstance(rejections, list)
    (rejection,) = rejections
    assert "not grounded" in rejection
    assert "was not set aside" not in rejection
    names = os.listdir(ledger)
    assert any(".ungrounded-" in name for name in names), names
