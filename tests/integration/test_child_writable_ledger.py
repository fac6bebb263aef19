"""The parent never trusts a path a child can change (issue 28, item 4 of "Deliver").

A task's ledger directory ``<squad>/<task>/`` is its child's to write, Landlock or not: the read
ledger, the ``.spec-read.lock``, the Pi session. A child with ``bash`` can leave a FIFO or a
symbolic link where the parent expects a file, or report on its stream a session that is not its
own. On the real file system:

* a FIFO at the lock froze the driver for ever in ``open(2)``; a symlinked lock had the
  unconfined parent create a file outside every grant. Now the lock is set aside, the task
  rejected with the reason in its history, and nothing is created elsewhere;
* a session reported outside the task's own session directory is never bound, and one that is
  not a regular file there when the task settles grounds nothing: the task is not accepted.

(``chmod`` on the same entries: ``test_child_chmod.py``.)
"""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest

from application.squads.scheduler import Scheduler
from domain.squad.model import TaskStatus
from tests.fakes.filesystem import InMemoryFileSystem
from tests.fakes.locks import FakeLockFactory
from tests.integration.ops_support import CHAIN_SPEC, PASS_REPORT, finish, operations
from tests.runtime_world import RuntimeWorld, make_world

HUNG_AFTER_SECONDS = 10.0
LOCK = ".spec-read.lock"


def published(kind: str, tmp_path: Path) -> RuntimeWorld:
    world = make_world(kind, tmp_path, CHAIN_SPEC)  # type: ignore[arg-type]
    world.publish()
    return world


@pytest.fixture
def disk(tmp_path: Path) -> RuntimeWorld:
    return published("disk", tmp_path)


@pytest.fixture(params=["memory-fs", "disk"])
def world(request: pytest.FixtureRequest, tmp_path: Path) -> RuntimeWorld:
    return published(request.param, tmp_path)


def build_started(world: RuntimeWorld) -> Scheduler:
    """``design`` accepted on its own reads; ``build``'s child live (not yet bound)."""
    scheduler = world.scheduler()
    scheduler.reconcile()
    finish(world, scheduler, "design")
    scheduler.reconcile()
    assert world.runtime.latest("build").alive()
    return scheduler


def copy_design_attestation_to_build(world: RuntimeWorld) -> None:
    """An attestation the parent never saw ``build`` earn: settlement sets it aside, which is
    done under ``build``'s task lock."""
    document = json.loads(world.read_file(world.ledger_file("design")))
    document["taskId"] = "build"
    data = (json.dumps(document, indent=2) + "\n").encode()
    world.fs.write_atomic(world.ledger_file("build"), data)


def pump_within(scheduler: Scheduler, fifo: Path | None = None) -> None:
    """One pump that must come back: a driver blocked on a child's file fails the test (and a
    FIFO is then opened for reading, so the blocked thread does not outlive it)."""
    worker = threading.Thread(target=scheduler.pump, daemon=True)
    worker.start()
    worker.join(HUNG_AFTER_SECONDS)
    if worker.is_alive() and fifo is not None:
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
        worker.join(HUNG_AFTER_SECONDS)
        pytest.fail(f"the driver froze for {HUNG_AFTER_SECONDS:g} s opening a child's FIFO")
    assert not worker.is_alive(), "the driver froze on a child's file"


def rejections(world: RuntimeWorld, task_id: str) -> list[str]:
    history = world.store.messages(world.squad_id, task_id)
    return [m.text for m in history if m.text.startswith("Completion rejected")]


def settle_forged_build(world: RuntimeWorld, scheduler: Scheduler, lock: Path) -> str:
    """``build``'s child forged its ledger, left ``lock`` as it is, and ended its turn; the one
    rejection the parent recorded."""
    build = world.runtime.latest("build")
    build.bind(world.session_of("build"))
    scheduler.pump()
    copy_design_attestation_to_build(world)
    build.say("All done.")
    build.settle(tool_calls=0)
    trapped = os.path.lexists(lock) and stat.S_ISFIFO(os.lstat(lock).st_mode)
    pump_within(scheduler, lock if trapped else None)
    assert world.task("build").status is not TaskStatus.DONE
    (rejection,) = rejections(world, "build")
    return rejection


def aside(world: RuntimeWorld, pattern: str) -> list[Path]:
    ledger = Path(world.layout().ledger_dir("build"))
    return sorted(ledger.glob(pattern))


# -- the task lock ------------------------------------------------------------------------------


def test_a_fifo_at_the_task_lock_is_set_aside_instead_of_freezing_the_driver(
    disk: RuntimeWorld,
) -> None:
    scheduler = build_started(disk)
    lock = Path(disk.layout().ledger_dir("build")) / LOCK
    lock.unlink(missing_ok=True)
    os.mkfifo(lock)
    rejection = settle_forged_build(disk, scheduler, lock)
    assert "not grounded" in rejection
    assert f"its read lock {LOCK} was refused (the lock file is a FIFO" in rejection
    (unsafe,) = aside(disk, f"{LOCK}.unsafe-*")
    assert stat.S_ISFIFO(os.lstat(unsafe).st_mode), "the child's FIFO, kept for audit"
    assert stat.S_ISREG(os.lstat(lock).st_mode), "a fresh lock file took its place"
    assert len(aside(disk, "spec-read-attestation.json.ungrounded-*")) == 1
    assert rejection.rsplit("set aside as ", 1)[-1] == unsafe.name


@pytest.mark.parametrize("dangling", [True, False])
def test_a_symlinked_task_lock_never_has_the_parent_create_or_lock_a_file_elsewhere(
    disk: RuntimeWorld, tmp_path: Path, dangling: bool
) -> None:
    scheduler = build_started(disk)
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "created-by-the-parent"
    if not dangling:
        target.write_bytes(b"the operator's file\n")
    lock = Path(disk.layout().ledger_dir("build")) / LOCK
    lock.unlink(missing_ok=True)
    lock.symlink_to(target)
    rejection = settle_forged_build(disk, scheduler, lock)
    assert "the lock file is a symbolic link" in rejection
    assert sorted(p.name for p in outside.iterdir()) == ([] if dangling else [target.name])
    if not dangling:
        assert target.read_bytes() == b"the operator's file\n"
    (unsafe,) = aside(disk, f"{LOCK}.unsafe-*")
    assert os.readlink(unsafe) == str(target), "the child's link, kept for audit"


def test_resume_task_sets_a_fifo_lock_aside_instead_of_freezing(disk: RuntimeWorld) -> None:
    """``resume_task`` releases invalid progress under the same task lock."""
    scheduler = build_started(disk)
    build = disk.runtime.latest("build")
    build.exit(code=1)
    scheduler.pump()
    lock = Path(disk.layout().ledger_dir("build")) / LOCK
    lock.unlink(missing_ok=True)
    os.mkfifo(lock)
    ops = operations(disk)
    ops.pause_task(disk.squad_id, "build")
    worker = threading.Thread(target=ops.resume_task, args=(disk.squad_id, "build"), daemon=True)
    worker.start()
    worker.join(HUNG_AFTER_SECONDS)
    if worker.is_alive():
        os.close(os.open(lock, os.O_RDONLY | os.O_NONBLOCK))
        pytest.fail("resume_task froze opening the child's FIFO")
    assert stat.S_ISREG(os.lstat(lock).st_mode)
    assert len(aside(disk, f"{LOCK}.unsafe-*")) == 1


# -- the session a task is bound to ---------------------------------------------------------------


def foreign_sessions(world: RuntimeWorld) -> dict[str, str]:
    own = world.layout().session_dir("build")
    return {
        "sibling's session": world.session_of("docs"),
        "outside the squad": f"{world.base}/elsewhere.jsonl",
        "dot-dot into a sibling": f"{own}/../../docs/session/x.jsonl",
        "dot-dot back in": f"{own}/sub/../build.jsonl",
        "the ledger itself": world.ledger_file("build"),
        "the session directory": own,
    }


@pytest.mark.parametrize(
    "which",
    [
        "sibling's session",
        "outside the squad",
        "dot-dot into a sibling",
        "dot-dot back in",
        "the ledger itself",
        "the session directory",
    ],
)
def test_a_session_reported_outside_the_task_session_directory_is_never_bound(
    world: RuntimeWorld, which: str
) -> None:
    scheduler = build_started(world)
    reported = foreign_sessions(world)[which]
    build = world.runtime.latest("build")
    build.bind(reported)
    scheduler.pump()
    assert world.task("build").session is None
    history = [m.text for m in world.store.messages(world.squad_id, "build")]
    refusals = [text for text in history if text.startswith("Session binding refused")]
    assert len(refusals) == 1, history
    assert "is not a file directly in the task's own session directory" in refusals[0]
    # Its reads, however real, are observed in no session of the task: not accepted.
    world.attest("build")
    build.say(PASS_REPORT)
    build.settle()
    scheduler.pump()
    assert world.task("build").status is not TaskStatus.DONE
    (rejection,) = rejections(world, "build")
    assert "no bound session" in rejection


def replace_session(world: RuntimeWorld, how: str, elsewhere: str) -> None:
    """What a child can do to its own session after binding it, before it settles."""
    session = world.session_of("build")
    directory = world.layout().session_dir("build")
    fs = world.fs
    if how == "deleted":
        fs.remove_file(session)
    elif how == "file is a link":
        fs.remove_file(session)
        if isinstance(fs, InMemoryFileSystem):
            fs.add_file(elsewhere, b"{}\n")
            fs.add_symlink(session, elsewhere)
        else:
            Path(elsewhere).parent.mkdir(parents=True, exist_ok=True)
            Path(elsewhere).write_bytes(b"{}\n")
            os.symlink(elsewhere, session)
    elif how == "directory is a link":
        world.link_dir_elsewhere(directory, os.path.dirname(elsewhere))
    elif isinstance(fs, InMemoryFileSystem):  # a FIFO: the in-memory file system has none
        pytest.skip("the in-memory file system has no FIFOs")
    else:
        fs.remove_file(session)
        os.mkfifo(session)


@pytest.mark.parametrize(
    ("how", "reason"),
    [
        ("deleted", "is missing"),
        ("file is a link", "is a symbolic link"),
        ("directory is a link", "is not a directory"),
        ("fifo", "not a regular file"),
    ],
)
def test_a_bound_session_that_is_no_regular_file_in_the_task_grounds_nothing(
    world: RuntimeWorld, how: str, reason: str
) -> None:
    scheduler = build_started(world)
    build = world.runtime.latest("build")
    build.bind(world.session_of("build"))
    scheduler.pump()
    session = world.task("build").session
    assert session is not None
    assert session.file == world.session_of("build")
    world.attest("build")
    replace_session(world, how, f"{world.base}/other/{how.replace(' ', '-')}.jsonl")
    build.say(PASS_REPORT)
    build.settle()
    pump_within(scheduler)
    assert world.task("build").status is not TaskStatus.DONE
    (rejection,) = rejections(world, "build")
    assert "not grounded" in rejection
    assert reason in rejection, rejection


def test_a_session_directory_replaced_by_a_link_is_refused_when_reported(
    world: RuntimeWorld,
) -> None:
    scheduler = build_started(world)
    directory = world.layout().session_dir("build")
    world.make_dirs(directory)
    world.link_dir_elsewhere(directory, f"{world.base}/elsewhere")
    world.runtime.latest("build").bind(world.session_of("build"))
    scheduler.pump()
    assert world.task("build").session is None
    history = [m.text for m in world.store.messages(world.squad_id, "build")]
    assert any("is not a directory" in text for text in history), history


def test_a_lock_refused_again_after_it_was_set_aside_still_rejects_the_task(
    tmp_path: Path,
) -> None:
    """A child that plants its trap again between the parent's two attempts: the driver does not
    stop and does not wait; the task is rejected, saying its ledger could not be set aside."""
    world = published("memory-fs", tmp_path)
    assert isinstance(world.locks, FakeLockFactory)
    scheduler = build_started(world)
    world.locks.refused.add(f"{world.layout().ledger_dir('build')}/{LOCK}")
    rejection = settle_forged_build(world, scheduler, Path(world.base, "no-such-lock"))
    assert "not grounded" in rejection
    assert "its ledger was not set aside" in rejection
    assert "the lock file is a FIFO" in rejection
    assert world.fs.exists(world.ledger_file("build")), "left in place, never trusted"
