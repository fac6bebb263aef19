"""(7) Scaling: create and full-read cost against spec size and artifact count, with the growth
order observed (least-squares slope of log(time) on log(size): 1 is linear, 2 quadratic).

* create vs spec size: 64 KiB, 256 KiB, 1 MiB specs, 128 tasks, 10 artifacts of 256 KiB;
* create vs artifact count: 10, 100, 1,000 artifacts of 256 KiB, 1 MiB spec, 128 tasks;
* full read vs spec size: every chunk read and committed through the real bridge (as in
  ``bench.full_read``), 64 KiB, 256 KiB and 1 MiB specs.

Creates run in fresh processes (``bench.create_worker``, warm second create), each beside the
read + SHA-256 + fsync floor of the same inputs and layout (as in ``bench.create_limits``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import attrs

from bench.common import (
    Json,
    Result,
    growth_order,
    loglog_slope,
    median,
    parse_args,
    progress,
    scratch,
)
from bench.create_limits import create_once, floor_once
from bench.full_read import bridge_sequential, sha_floor
from bench.published import publish_spec
from bench.workspace import (
    KIB,
    MIB,
    Adapters,
    ArtifactFile,
    build_spec,
    make_artifacts,
    task_ids,
    write_spec,
)

NAME = "scaling"


def create_point(
    base: Path,
    label: str,
    *,
    size: int,
    tasks: int,
    artifacts: Sequence[ArtifactFile],
    workers: int,
) -> tuple[list[float], list[float]]:
    project = base / f"project-{label}"
    spec = write_spec(project, build_spec(size, tasks=tasks, artifacts=artifacts))
    times: list[float] = []
    floors: list[float] = []
    for worker in range(workers):
        answer = create_once(project, base / "roots", f"{label}-{worker}")
        times.append(answer["times_ms"][1])
        floor = floor_once(spec, artifacts, answer, base / "floors", f"{label}-{worker}")
        floors.append(floor["total_ms"][1])
    return times, floors


@attrs.frozen
class CreatePoint:
    """One create measured by ``create_series``: its label, spec size, artifacts and the
    description its result entry carries."""

    label: str
    size: int
    artifacts: Sequence[ArtifactFile]
    description: str


def create_series(
    result: Result, base: Path, points: Sequence[CreatePoint], *, tasks: int, workers: int
) -> list[float]:
    """Each point's warm creates beside their floor, added as ``create.<label>``; the medians."""
    medians: list[float] = []
    for point in points:
        times, floors = create_point(
            base,
            point.label,
            size=point.size,
            tasks=tasks,
            artifacts=point.artifacts,
            workers=workers,
        )
        result.add(
            f"create.{point.label}",
            point.description,
            times,
            floor=("read + SHA-256 once + fsyncs of the same layout", floors),
        )
        medians.append(median(times))
        progress(f"create {point.label}: {medians[-1]:.0f} ms")
    return medians


def read_point(
    adapters: Adapters, base: Path, label: str, size: int, runs: int
) -> tuple[list[float], list[float], list[float], int]:
    data = build_spec(size, tasks=max(runs, 2))
    published = publish_spec(adapters, base / f"read-root-{label}", base / f"read-{label}", data)
    totals: list[float] = []
    per_chunk: list[float] = []
    floor: list[float] = []
    for task_id in task_ids(max(runs, 2))[:runs]:
        run = bridge_sequential(published, task_id, base)
        totals.append(run["total"])
        per_chunk += run["reads"]
        floor += sha_floor(data, 10)
    count: int = published.squad.spec.chunk_count  # type: ignore[union-attr]
    return totals, per_chunk, floor, count


def slope_entry(axis: str, xs: Sequence[float], ys: Sequence[float]) -> Json:
    slope = loglog_slope(xs, ys)
    return {
        "axis": axis,
        "x": list(xs),
        "median_ms": list(ys),
        "slope": slope,
        "order": growth_order(slope),
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(NAME, "Growth of create and full-read cost.", argv)
    result = Result(NAME, quick=args.quick)
    if args.quick:
        sizes, counts, each, tasks, workers, runs = (
            [16 * KIB, 64 * KIB],
            [2, 8],
            16 * KIB,
            8,
            1,
            1,
        )
        fixed_artifacts, fixed_size = 2, 64 * KIB
    else:
        sizes, counts, each, tasks, workers, runs = (
            [64 * KIB, 256 * KIB, MIB],
            [10, 100, 1000],
            256 * KIB,
            128,
            3,
            4,
        )
        fixed_artifacts, fixed_size = 10, MIB
    adapters = Adapters.real()
    slopes: list[Json] = []
    with scratch(NAME, keep=args.keep) as base:
        progress(f"generating {max(counts)} artifacts of {each} B")
        artifacts = make_artifacts(base / "artifacts", max(counts), each)
        by_size = [
            CreatePoint(
                f"spec-{size // KIB}KiB",
                size,
                artifacts[:fixed_artifacts],
                f"create, {size // KIB} KiB spec, {tasks} tasks, {fixed_artifacts} artifacts",
            )
            for size in sizes
        ]
        medians = create_series(result, base, by_size, tasks=tasks, workers=workers)
        slopes.append(slope_entry("create vs spec bytes", sizes, medians))
        by_count = [
            CreatePoint(
                f"artifacts-{count}",
                fixed_size,
                artifacts[:count],
                f"create, {fixed_size // KIB} KiB spec, {tasks} tasks, {count} artifacts of "
                f"{each // KIB} KiB",
            )
            for count in counts
        ]
        medians = create_series(result, base, by_count, tasks=tasks, workers=workers)
        slopes.append(slope_entry("create vs artifact count", counts, medians))
        medians = []
        chunk_medians: list[float] = []
        for size in sizes:
            label = f"spec-{size // KIB}KiB"
            totals, per_chunk, floor, chunks = read_point(adapters, base, label, size, runs)
            result.add(
                f"read.{label}",
                f"full read + commit via bridge, {size // KIB} KiB spec ({chunks} chunks)",
                totals,
                floor=("SHA-256 of the spec bytes once", floor),
            )
            result.add(
                f"read.{label}.per_chunk",
                f"chunk read via bridge, per chunk, {size // KIB} KiB spec",
                per_chunk,
                floor=("SHA-256 of the spec bytes once", floor),
            )
            medians.append(median(totals))
            chunk_medians.append(median(per_chunk))
            progress(f"full read {label}: {medians[-1]:.1f} ms")
        slopes.append(slope_entry("full read vs spec bytes", sizes, medians))
        slopes.append(slope_entry("chunk read vs spec bytes", sizes, chunk_medians))
    result.extra["slopes"] = slopes
    return result.finish(args.results_dir)


if __name__ == "__main__":
    raise SystemExit(main())
