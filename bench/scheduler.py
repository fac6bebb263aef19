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

import json
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from bench.common import (
    Json,
    Result,
    median,
    ms_since,
    parse_args,
    progress,
    run_json,
    scratch,
)
from bench.scheduler_drive import (
    Prepared,
    counted_drive,
    drive_file,
    drive_legacy,
    prepare,
    restore,
)
from bench.workspace import KIB, MIB, Adapters, task_ids

NAME = "scheduler"


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
    elapsed = ms_since(begin)
    shutil.rmtree(target)
    return elapsed


def peak_rss_of_drive(prepared: Prepared) -> Json:
    """The driver's resident set over one file-squad drive, in a fresh process
    (``bench.scheduler_worker``): its high-water mark (``VmHWM``, the whole process: imports,
    store, scheduler and the 128 fake children) and its growth over the drive itself. Linux."""
    restore(prepared.file_template, prepared.file_dir)
    request = {"root": str(prepared.file_root), "squad_id": prepared.file_id}
    answer = run_json(
        [
            sys.executable,
            "-m",
            "bench.scheduler_worker",
            json.dumps({**request, "tasks": prepared.tasks}),
        ],
        timeout=900,
    )
    before, peak = answer.get("rss_before_kib"), answer.get("peak_kib")
    if before is None or peak is None:
        return {}
    return {"peak_mib": peak / KIB, "growth_mib": (peak - before) / KIB}


def scaling_rows(
    result: Result,
    adapters: Adapters,
    base: Path,
    *,
    size: int,
    points: Json,
    runs: int,
    prepared_by: dict[tuple[int, int], Prepared],
) -> Json:
    """File-squad cost per task over task counts and over ``maxConcurrency``; each point's
    floor is the legacy squad of the same configuration, driven in the same round."""
    extra: Json = {}
    for axis, configurations in points.items():
        for tasks, concurrency in configurations:
            prepared = prepared_by.get((tasks, concurrency))
            if prepared is None:
                prepared = prepare(adapters, base, tasks, concurrency, size)
                prepared_by[(tasks, concurrency)] = prepared
            file: list[float] = []
            legacy: list[float] = []
            for _ in range(runs):
                legacy.append(drive_legacy(adapters, prepared)["total"] / tasks)
                file.append(drive_file(adapters, prepared)["total"] / tasks)
            progress(
                f"{axis}: {tasks} tasks, maxConcurrency {concurrency}: file {median(file):.1f} "
                f"ms/task, legacy {median(legacy):.1f} ms/task"
            )
            result.add(
                f"scaling.{axis}.t{tasks}_c{concurrency}.per_task",
                f"file squad per task, {tasks} tasks, maxConcurrency {concurrency}",
                file,
                floor=("legacy run per task, same configuration and round", legacy),
                target="< 10 ms",
                met=median(file) < 10,
            )
            extra.setdefault(axis, []).append(
                {
                    "tasks": tasks,
                    "max_concurrency": concurrency,
                    "file_ms_per_task": median(file),
                    **counted_drive(adapters, prepared),
                }
            )
    return extra


def per_run_task(totals: Sequence[float], tasks: int) -> list[float]:
    """Each run's total spread over its ``tasks``."""
    return [total / tasks for total in totals]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(NAME, "Scheduler overhead over instantly settling fake children.", argv)
    result = Result(NAME, quick=args.quick)
    tasks, size, runs = (8, 40 * KIB, 1) if args.quick else (128, MIB, 3)
    concurrency = min(64, tasks)
    # Task counts at maxConcurrency min(64, tasks), and maxConcurrency at the largest count.
    counts = (4, 8) if args.quick else (16, 32, 64, 128)
    concurrencies = (1, 8) if args.quick else (1, 8, 64)
    points: Json = {
        "tasks": [(count, min(64, count)) for count in counts],
        "concurrency": [(tasks, limit) for limit in concurrencies],
    }
    adapters = Adapters.real()
    with scratch(NAME, keep=args.keep) as base:
        prepared = prepare(adapters, base, tasks, concurrency, size)
        legacy: list[float] = []
        file: list[float] = []
        floor: list[float] = []
        passes: list[int] = []
        for run in range(runs):
            legacy_run = drive_legacy(adapters, prepared)
            file_run = drive_file(adapters, prepared)
            floor.append(durable_floor(adapters, base, tasks, prepared.legacy_template))
            legacy.append(legacy_run["total"])
            file.append(file_run["total"])
            passes += [legacy_run["passes"], file_run["passes"]]
            progress(
                f"run {run + 1}/{runs}: legacy {legacy[-1]:.0f} ms, file {file[-1]:.0f} ms, "
                f"floor {floor[-1]:.0f} ms"
            )
        rss = peak_rss_of_drive(prepared)
        per_task = counted_drive(adapters, prepared)
        scaling = scaling_rows(
            result,
            adapters,
            base,
            size=size,
            points=points,
            runs=1 if args.quick else 3,
            prepared_by={(tasks, concurrency): prepared},
        )
    durable = "2 atomic task.json writes + 1 fsynced append per task"

    # Each drive: its first reconcile to review and the same per task, each beside its floor.
    for kind, squad, to_review, values, floor_of_kind, floor_per_task in (
        (
            "legacy",
            "legacy inline squad",
            f"legacy inline squad: first reconcile to review, {tasks} tasks, maxConcurrency "
            f"{concurrency}",
            legacy,
            (durable, floor),
            "same floor per task",
        ),
        (
            "file",
            "file squad",
            f"file squad ({size} B spec, all tasks attested): first reconcile to review",
            file,
            ("the legacy run of the same round", legacy),
            "legacy run per task, same round",
        ),
    ):
        result.add(f"{kind}.to_review", to_review, values, floor=floor_of_kind)
        result.add(
            f"{kind}.per_task",
            f"{squad}: time per task",
            per_run_task(values, tasks),
            floor=(floor_per_task, per_run_task(floor_of_kind[1], tasks)),
        )
    result.add(
        "file.per_task_vs_durable",
        "file squad: time per task against the durable writes a task needs",
        per_run_task(file, tasks),
        floor=(durable, per_run_task(floor, tasks)),
        target="< 10 ms",
        met=median(file) / tasks < 10,
    )
    if rss:
        for measure, label, key in (
            (
                "driver.peak_rss",
                f"driver peak RSS (VmHWM of a fresh process) over one file-squad drive, "
                f"{tasks} tasks",
                "peak_mib",
            ),
            (
                "driver.rss_growth",
                f"driver RSS growth over that drive (VmHWM - RSS once imported), {tasks} tasks",
                "growth_mib",
            ),
        ):
            result.add(measure, label, [rss[key]], unit="MiB")
    result.extra.update(
        {
            "tasks": tasks,
            "max_concurrency": concurrency,
            "spec_bytes": size,
            "pre_attestation_ms": prepared.attest_ms,
            "passes": passes,
            "scaling": scaling,
            "driver_rss": rss,
            # Store transactions and fsyncs per task of the measured configuration (an extra,
            # untimed drive); the scaling points carry the same two keys.
            "counts": per_task,
        }
    )
    return result.finish(args.results_dir)


if __name__ == "__main__":
    raise SystemExit(main())
