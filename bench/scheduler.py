"""(6) Scheduler overhead: a 128-task DAG (64 roots, each of the other 64 depending on two of
them), ``maxConcurrency`` 64, over ``tests.fakes.child_runtime.FakeChildRuntime`` whose
children report and settle the moment they are spawned. Measured from the first ``reconcile``
to the ``review_required`` notice, on the real file system with the real store and locks.

* legacy: an inline squad (no spec): settlement needs no attestation;
* file: a file squad of a 1 MiB spec whose 128 tasks were all attested beforehand through the
  child role (33 chunks each), so every settlement runs ``validate_task_attestation`` and every
  reconcile audits the done tasks, as in production.

Each run starts from a copy of the prepared squad directory (same paths, so attestations stay
bound). Floor, for the legacy run: the durable writes a task needs at least, two atomic
``task.json`` writes (started, done) and one fsynced message append per task, through the same
``FileSystem`` adapter. The file run's floor is the legacy run of the same round: the ratio is
what the contract adds.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from adapters.store_files import FileStore
from adapters.store_json import JsonSquadCodec
from application.scheduler import Notice, Scheduler
from bench.common import Json, Result, parse_args, progress, results_dir, scratch
from bench.published import publish_spec
from bench.workspace import (
    KIB,
    MIB,
    Adapters,
    attest,
    build_spec,
    container_for,
    task_ids,
)
from domain.spec.model import SquadConfig
from domain.squad.model import Squad, SquadStatus, Task, TaskStatus
from tests.fakes.child_runtime import FakeChild, FakeChildRuntime

NAME = "scheduler"
LEGACY_ID = "legacy-bench-squad"


def instant(child: FakeChild) -> None:
    child.say("Done; the tests pass.\n\n## Verdict: PASS")
    child.settle()


def write_legacy(root: Path, project: Path, tasks: int, concurrency: int) -> Path:
    from bench.workspace import _dependencies

    created = datetime.now(UTC).replace(microsecond=0)
    squad = Squad(
        id=LEGACY_ID,
        goal="Benchmark the scheduler.",
        status=SquadStatus.RUNNING,
        created=created,
        cwd=str(project),
        config=SquadConfig(max_concurrency=concurrency, auto_unblock=True, max_retries=2),
        task_ids=tuple(task_ids(tasks)),
    )
    codec = JsonSquadCodec()
    squad_dir = root / LEGACY_ID
    squad_dir.mkdir(parents=True)
    (squad_dir / "squad.json").write_bytes(codec.encode_squad(squad))
    for index, task_id in enumerate(task_ids(tasks)):
        depends = tuple(_dependencies(index, tasks))
        task = Task(
            id=task_id,
            title=f"Task {task_id}",
            description="Do it and run the tests.",
            agent="backend",
            status=TaskStatus.BLOCKED if depends else TaskStatus.PENDING,
            depends=depends,
            created=created,
        )
        (squad_dir / task_id).mkdir()
        (squad_dir / ".records" / task_id).mkdir(parents=True)
        (squad_dir / ".records" / task_id / "task.json").write_bytes(codec.encode_task(task))
    return squad_dir


def drive(adapters: Adapters, root: Path, squad_id: str, tasks: int) -> Json:
    notices: list[Notice] = []
    runtime = FakeChildRuntime(on_spawn=instant)
    store = FileStore(fs=adapters.fs, locks=adapters.locks, root=str(root))
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
    total = (time.perf_counter_ns() - begin) / 1e6
    snapshot = store.snapshot(squad_id)
    done = sum(task.status is TaskStatus.DONE for task in snapshot.tasks.values())
    if done != tasks or len(runtime.spawned) != tasks:
        raise RuntimeError(f"{done} done, {len(runtime.spawned)} spawned, {tasks} expected")
    return {"total": total, "passes": passes}


def durable_floor(adapters: Adapters, base: Path, tasks: int, template: Path) -> float:
    task_json = (template / ".records" / task_ids(tasks)[0] / "task.json").read_bytes()
    message = b'{"id":"0123456789abcdef0123456789abcdef","kind":"done","text":"Task completed"}\n'
    target = base / f"floor-{time.perf_counter_ns()}"
    for task_id in task_ids(tasks):
        (target / ".records" / task_id).mkdir(parents=True)
    begin = time.perf_counter_ns()
    for task_id in task_ids(tasks):
        path = str(target / ".records" / task_id / "task.json")
        adapters.fs.write_atomic(path, task_json)
        adapters.fs.write_atomic(path, task_json)
        adapters.fs.append_bytes(str(target / ".records" / task_id / "messages.jsonl"), message)
    elapsed = (time.perf_counter_ns() - begin) / 1e6
    shutil.rmtree(target)
    return elapsed


def restore(template: Path, squad_dir: Path) -> None:
    shutil.rmtree(squad_dir, ignore_errors=True)
    shutil.copytree(template, squad_dir, symlinks=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(NAME, "Scheduler overhead over instantly settling fake children.", argv)
    result = Result(NAME, quick=args.quick)
    tasks, size, runs = (8, 40 * KIB, 1) if args.quick else (128, MIB, 3)
    concurrency = min(64, tasks)
    adapters = Adapters.real()
    with scratch(NAME, keep=args.keep) as base:
        project = base / "project"
        data = build_spec(size, tasks=tasks, max_concurrency=concurrency)
        file_root = base / "file-root"
        published = publish_spec(adapters, file_root, project, data)
        progress(f"attesting {tasks} tasks ({published.squad.spec.chunk_count} chunks each)")  # type: ignore[union-attr]
        attest_begin = time.perf_counter_ns()
        for task in published.tasks:
            attest(adapters, published, task.id)
        attest_ms = (time.perf_counter_ns() - attest_begin) / 1e6
        file_dir = Path(published.squad_dir)
        file_template = base / "file-template"
        shutil.copytree(file_dir, file_template, symlinks=True)
        legacy_root = base / "legacy-root"
        legacy_dir = write_legacy(legacy_root, project, tasks, concurrency)
        legacy_template = base / "legacy-template"
        shutil.copytree(legacy_dir, legacy_template, symlinks=True)
        legacy: list[float] = []
        file: list[float] = []
        floor: list[float] = []
        passes: list[int] = []
        for run in range(runs):
            restore(legacy_template, legacy_dir)
            legacy_run = drive(adapters, legacy_root, LEGACY_ID, tasks)
            restore(file_template, file_dir)
            file_run = drive(adapters, file_root, published.squad.id, tasks)
            floor.append(durable_floor(adapters, base, tasks, legacy_template))
            legacy.append(legacy_run["total"])
            file.append(file_run["total"])
            passes += [legacy_run["passes"], file_run["passes"]]
            progress(
                f"run {run + 1}/{runs}: legacy {legacy[-1]:.0f} ms, file {file[-1]:.0f} ms, "
                f"floor {floor[-1]:.0f} ms"
            )
    result.add(
        "legacy.to_review",
        f"legacy inline squad: first reconcile to review, {tasks} tasks, maxConcurrency "
        f"{concurrency}",
        legacy,
        floor=("2 atomic task.json writes + 1 fsynced append per task", floor),
    )
    result.add(
        "legacy.per_task",
        "legacy inline squad: time per task",
        [value / tasks for value in legacy],
        floor=("same floor per task", [value / tasks for value in floor]),
    )
    result.add(
        "file.to_review",
        f"file squad ({size} B spec, all tasks attested): first reconcile to review",
        file,
        floor=("the legacy run of the same round", legacy),
    )
    result.add(
        "file.per_task",
        "file squad: time per task",
        [value / tasks for value in file],
        floor=("legacy run per task, same round", [value / tasks for value in legacy]),
    )
    result.extra.update(
        {
            "tasks": tasks,
            "max_concurrency": concurrency,
            "spec_bytes": size,
            "pre_attestation_ms": attest_ms,
            "passes": passes,
        }
    )
    result.write(results_dir(args.results_dir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
