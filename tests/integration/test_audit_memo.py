"""The reconcile pass remembers a done task's valid audit
(``application/squads/scheduler/audit_memo.py``)
only while the files it read provably hold: a ledger forged after the memo was taken, by
replacement or in place, by this process or another, is audited again and the task reopened.

The in-memory file system counts the reads; its timestamps are tiny tick counts, so a witness
over the real wall clock finds every file settled unless a test says otherwise."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from adapters.fs.witness import IdentityWitnesses
from application.squads.scheduler import Scheduler
from domain.squad.model import TaskStatus
from tests.fakes.fake_tree import FakeFile
from tests.fakes.filesystem import InMemoryFileSystem
from tests.integration.ops_support import CHAIN_SPEC, finish, tamper
from tests.runtime_world import RuntimeWorld, make_world

SECOND = 1_000_000_000


def world_of(kind: str, tmp_path: Path) -> RuntimeWorld:
    built = make_world(kind, tmp_path, CHAIN_SPEC)  # type: ignore[arg-type]
    built.publish()
    return built


def scheduler_with(world: RuntimeWorld, wall_ns: Callable[[], int]) -> Scheduler:
    return world.use_cases().scheduler(
        squad_id=world.squad_id,
        runtime=world.runtime,
        notices=world.notices.append,
        backoff=(2.0, 10.0),
        witnesses=IdentityWitnesses(world.fs, wall_ns),
    )


def attestation_reads(world: RuntimeWorld) -> int:
    assert isinstance(world.fs, InMemoryFileSystem)
    path = world.ledger_file("design")
    return sum(call.path == path for call in world.fs.calls_of("read_stable"))


def design_done(world: RuntimeWorld, wall_ns: Callable[[], int]) -> Scheduler:
    scheduler = scheduler_with(world, wall_ns)
    scheduler.reconcile()
    finish(world, scheduler, "design")
    assert world.task("design").status is TaskStatus.DONE
    scheduler.reconcile()  # the pass that audits design and remembers the verdict
    return scheduler


def attestation_node(world: RuntimeWorld) -> FakeFile:
    assert isinstance(world.fs, InMemoryFileSystem)
    node = world.fs.nodes[world.ledger_file("design")]
    assert isinstance(node, FakeFile)
    return node


def forge_in_place(world: RuntimeWorld) -> None:
    """Chunk 0's digest zeroed in the file's own bytes: same inode, size and times."""
    node = attestation_node(world)
    digest = json.loads(node.data)["chunks"][0]["sha256"]
    node.data = node.data.replace(digest.encode(), b"0" * 64, 1)


def test_a_settled_valid_audit_is_reused_until_the_ledger_is_replaced(tmp_path: Path) -> None:
    world = world_of("memory-fs", tmp_path)
    scheduler = design_done(world, time.time_ns)
    reads = attestation_reads(world)
    scheduler.reconcile()
    scheduler.reconcile()
    assert attestation_reads(world) == reads, "remembered: two passes, no read of the ledger"
    tamper(world, "design")  # the child rewrites its attestation (a new file)
    scheduler.reconcile()
    assert world.task("design").status is not TaskStatus.DONE


def test_a_ledger_forged_in_place_within_the_racy_window_is_seen(tmp_path: Path) -> None:
    world = world_of("memory-fs", tmp_path)
    # The wall clock stays 1 ms after the attestation's ctime: it is always "just written".
    scheduler = design_done(world, lambda: attestation_node(world).ctime_ns + 1_000_000)
    reads = attestation_reads(world)
    scheduler.reconcile()
    assert attestation_reads(world) == reads + 1, "racy: audited again on every pass"
    forge_in_place(world)
    scheduler.reconcile()
    assert world.task("design").status is not TaskStatus.DONE


def test_a_lost_observation_record_is_seen(tmp_path: Path) -> None:
    world = world_of("memory-fs", tmp_path)
    scheduler = design_done(world, time.time_ns)
    world.fs.remove_file(f"{world.root}/{world.squad_id}/.records/design/observed.jsonl")
    scheduler.reconcile()
    assert world.task("design").status is not TaskStatus.DONE


def test_a_scheduler_clock_set_back_audits_again(tmp_path: Path) -> None:
    world = world_of("memory-fs", tmp_path)
    scheduler = design_done(world, time.time_ns)
    reads = attestation_reads(world)
    world.clock.current -= timedelta(hours=1)
    scheduler.reconcile()
    assert attestation_reads(world) > reads


@pytest.mark.parametrize("how", ["in place, old times put back", "replaced"])
def test_a_child_process_forging_its_ledger_after_the_memo_is_seen(
    tmp_path: Path, how: str
) -> None:
    """On the real file system, with a wall clock 10 s ahead so that the memo is taken: the
    forgery comes from another process, after the pass that remembered the valid verdict."""
    world = world_of("disk", tmp_path)
    scheduler = design_done(world, lambda: time.time_ns() + 10 * SECOND)
    path = world.ledger_file("design")
    document = json.loads(Path(path).read_bytes())
    digest = document["chunks"][0]["sha256"]
    forge = (
        "import os, sys; p, old = sys.argv[1], sys.argv[2].encode(); s = os.stat(p); "
        "data = open(p, 'rb').read().replace(old, b'0' * 64, 1); os.chmod(p, 0o600); "
        + (
            "fd = os.open(p, os.O_WRONLY); os.write(fd, data); os.close(fd); "
            "os.chmod(p, s.st_mode); os.utime(p, ns=(s.st_atime_ns, s.st_mtime_ns))"
            if how.startswith("in place")
            else "open(p + '.new', 'wb').write(data); os.replace(p + '.new', p)"
        )
    )
    time.sleep(0.01)  # past the timestamp granularity of the file system
    subprocess.run([sys.executable, "-c", forge, path, digest], check=True)
    scheduler.reconcile()
    assert world.task("design").status is not TaskStatus.DONE
