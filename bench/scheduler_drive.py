"""The squads ``bench.scheduler`` drives, and one drive: a file squad with every task attested
and the same DAG inline (``prepare``), restored from a template before each run, then driven
from the first ``reconcile`` to the ``review_required`` notice over fake children that report
and settle the moment they are spawned (``drive``), timed or counted."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import attrs

from adapters.store.files import FileStore
from application.ports import SquadTransaction
from application.squads.scheduler import Notice, Scheduler
from bench.common import Json, ms_since, progress
from bench.published import publish_spec
from bench.scheduler_legacy import LEGACY_ID, write_legacy
from bench.workspace import Adapters, attest, build_spec, container_for
from domain.squad.model import TaskStatus
from tests.fakes.child_runtime import FakeChild, FakeChildRuntime


def restore(template: Path, squad_dir: Path) -> None:
    shutil.rmtree(squad_dir, ignore_errors=True)
    shutil.copytree(template, squad_dir, symlinks=True)


@attrs.frozen
class Prepared:
    """One configuration's squads, ready to be restored and driven."""

    tasks: int
    concurrency: int
    file_root: Path
    file_dir: Path
    file_id: str
    file_template: Path
    legacy_root: Path
    legacy_dir: Path
    legacy_template: Path
    attest_ms: float
    chunks: int


def prepare(adapters: Adapters, base: Path, tasks: int, concurrency: int, size: int) -> Prepared:
    """A file squad of a ``size`` spec with every task attested, and the same DAG inline."""
    where = base / f"t{tasks}-c{concurrency}"
    project = base / "project"
    data = build_spec(size, tasks=tasks, max_concurrency=concurrency)
    file_root = where / "file-root"
    published = publish_spec(adapters, file_root, project, data)
    chunks = published.squad.spec.chunk_count  # type: ignore[union-attr]
    progress(f"{tasks} tasks, maxConcurrency {concurrency}: attesting ({chunks} chunks each)")
    attest_begin = time.perf_counter_ns()
    for task in published.tasks:
        attest(adapters, published, task.id)
    attest_ms = ms_since(attest_begin)
    file_dir = Path(published.squad_dir)
    file_template = where / "file-template"
    shutil.copytree(file_dir, file_template, symlinks=True)
    legacy_root = where / "legacy-root"
    legacy_dir = write_legacy(legacy_root, project, tasks, concurrency)
    legacy_template = where / "legacy-template"
    shutil.copytree(legacy_dir, legacy_template, symlinks=True)
    return Prepared(
        tasks=tasks,
        concurrency=concurrency,
        file_root=file_root,
        file_dir=file_dir,
        file_id=published.squad.id,
        file_template=file_template,
        legacy_root=legacy_root,
        legacy_dir=legacy_dir,
        legacy_template=legacy_template,
        attest_ms=attest_ms,
        chunks=chunks,
    )


def drive_legacy(adapters: Adapters, prepared: Prepared) -> Json:
    restore(prepared.legacy_template, prepared.legacy_dir)
    return drive(adapters, prepared.legacy_root, LEGACY_ID, prepared.tasks)


def drive_file(adapters: Adapters, prepared: Prepared) -> Json:
    restore(prepared.file_template, prepared.file_dir)
    return drive(adapters, prepared.file_root, prepared.file_id, prepared.tasks)


def instant(child: FakeChild) -> None:
    child.say("Done; the tests pass.\n\n## Verdict: PASS")
    child.settle()


def drive(
    adapters: Adapters,
    root: Path,
    squad_id: str,
    tasks: int,
    *,
    store_type: type[FileStore] = FileStore,
) -> Json:
    notices: list[Notice] = []
    runtime = FakeChildRuntime(on_spawn=instant)
    store = store_type(fs=adapters.fs, locks=adapters.locks, root=str(root))
    scheduler: Scheduler = container_for(adapters, root, store).scheduler(
        squad_id=squad_id, runtime=runtime, notices=notices.append, backoff=(2.0, 10.0)
    )
    begin = time.perf_counter_ns()
    scheduler.reconcile()
    passes = 1
    while not any(notice.kind == "review_required" for notice in notices):
        if scheduler.pump() == 0:
            scheduler.reconcile()
        passes += 1
        if passes > 20 * tasks:
            raise RuntimeError(f"no review after {passes} passes: {notices[-3:]}")
    total = ms_since(begin)
    snapshot = store.snapshot(squad_id)
    done = sum(task.status is TaskStatus.DONE for task in snapshot.tasks.values())
    if done != tasks or len(runtime.spawned) != tasks:
        raise RuntimeError(f"{done} done, {len(runtime.spawned)} spawned, {tasks} expected")
    return {"total": total, "passes": passes}


def counted_drive(adapters: Adapters, prepared: Prepared) -> Json:
    """One more drive of the file squad, not timed, counting per task the store transactions
    and the fsyncs (every ``os.fsync`` the file-system adapter makes: files and directories),
    and splitting its time per task into the process's CPU time and the time spent inside
    ``os.fsync``: on a busy machine the fsync share moves with the disk, the CPU share does not,
    so the two say which of them a change of the per-task figure came from."""
    restore(prepared.file_template, prepared.file_dir)
    opened = [0]
    fsync_ns = [0]
    real_fsync = os.fsync

    def timed_fsync(descriptor: int) -> None:
        begin = time.perf_counter_ns()
        try:
            real_fsync(descriptor)
        finally:
            fsync_ns[0] += time.perf_counter_ns() - begin

    class CountingStore(FileStore):
        @contextmanager
        def transaction(self, squad_id: str) -> Iterator[SquadTransaction]:
            opened[0] += 1
            with super().transaction(squad_id) as tx:
                yield tx

    cpu_begin = time.process_time_ns()
    with mock.patch.object(os, "fsync", wraps=timed_fsync) as fsync:
        run = drive(
            adapters,
            prepared.file_root,
            prepared.file_id,
            prepared.tasks,
            store_type=CountingStore,
        )
        fsyncs = fsync.call_count
    cpu_ms = (time.process_time_ns() - cpu_begin) / 1e6
    return {
        "transactions_per_task": opened[0] / prepared.tasks,
        "fsyncs_per_task": fsyncs / prepared.tasks,
        "wall_ms_per_task": run["total"] / prepared.tasks,
        "cpu_ms_per_task": cpu_ms / prepared.tasks,
        "fsync_ms_per_task": fsync_ns[0] / 1e6 / prepared.tasks,
    }
