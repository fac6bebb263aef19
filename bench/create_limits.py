"""(1) Create at the limits: a 1,048,576-byte spec with 128 tasks and 1,024 artifacts of 256 KiB
(256 MiB), generated once per run into a scratch directory on the real file system.

Every measurement runs in a fresh process (``bench.create_worker``): two creates per process,
the first cold (first use of every module, schema and regular expression), the second warm
(what a long-lived process such as the main Pi session pays). The floor, measured the same
way and interleaved with the creates: reading and SHA-256 hashing the spec and every artifact
once, plus writing and fsyncing the same number and sizes of files the create wrote and
fsyncing each directory once. Both read the artifacts from a warm page cache.

A 64 KiB spec (128 tasks, 10 artifacts of 256 KiB) is measured the same way beside its own
floor, with the first import of the CLI, so the share of a small create that is a
fixed per-process cost is known (``create.spec64KiB_*``).

Memory: growth of the resident set over each create: its high-water mark (``VmHWM``, reset
just before the create) minus the RSS before it. ``ru_maxrss`` is not used: a child process
inherits its parent's RSS at fork time there, which hid the growth under the parent's size.
Artifacts are hashed as a stream, so growth must not depend on their number or size: it is
shown at 10, 100 and 1,000 artifacts of 256 KiB (1 MiB spec each time) and at 10 of 8 MiB.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import Json, Result, median, parse_args, progress, run_json, scratch
from bench.workspace import KIB, MIB, ArtifactFile, build_spec, make_artifacts, write_spec

NAME = "create_limits"
WORKER = (sys.executable, "-m", "bench.create_worker")


def create_once(project: Path, roots_base: Path, label: str, creates: int = 2) -> Json:
    roots = [str(roots_base / f"{label}-{k}") for k in range(creates)]
    answer = run_json(
        [*WORKER, _json({"mode": "create", "project": str(project), "roots": roots})], timeout=900
    )
    for root in roots:
        shutil.rmtree(root, ignore_errors=True)
    return answer


def floor_once(
    spec: Path, artifacts: Sequence[ArtifactFile], layout: Json, target: Path, label: str
) -> Json:
    request = {
        "mode": "floor",
        "spec": str(spec),
        "artifacts": [a.path for a in artifacts],
        "files": layout["files"],
        "dirs": layout["dirs"],
        "target": str(target / label),
        "reps": 2,
    }
    answer = run_json([*WORKER, _json(request)], timeout=900)
    shutil.rmtree(target / label, ignore_errors=True)
    return answer


def _json(value: Any) -> str:
    return json.dumps(value)


def growth_mib(answer: Json, position: int = 0) -> float:
    """Peak RSS over one create minus the RSS before it (position 0: the cold create)."""
    return float(answer["growth_kib"][position]) / KIB


def warm_of(answers: Sequence[Json], key: str) -> list[float]:
    """Each worker answer's warm measurement of ``key`` (position 1: its second, in-process run)."""
    return [answer[key][1] for answer in answers]


def interleaved(
    layout: Json,
    spec: Path,
    artifacts: Sequence[ArtifactFile],
    base: Path,
    *,
    prefix: str,
    workers: int,
) -> tuple[list[Json], list[Json]]:
    """``workers`` creates of ``spec``'s project and as many floors, each in a fresh process,
    alternating which goes first so that neither always meets the other's disk traffic."""
    creates: list[Json] = []
    floors: list[Json] = []
    for worker in range(workers):
        order = ("floor", "create") if worker % 2 == 0 else ("create", "floor")
        for kind in order:
            if kind == "floor":
                floors.append(
                    floor_once(spec, artifacts, layout, base / "floors", f"{prefix}f{worker}")
                )
            else:
                creates.append(create_once(spec.parent, base / "roots", f"{prefix}c{worker}"))
        cold_ms, warm_ms = creates[-1]["times_ms"][:2]
        progress(
            f"{prefix}worker {worker + 1}/{workers}: create cold {cold_ms:.0f} ms, "
            f"warm {warm_ms:.0f} ms, floor {floors[-1]['total_ms'][1]:.0f} ms"
        )
    return creates, floors


def limits(
    result: Result, base: Path, spec: Path, artifacts: Sequence[ArtifactFile], workers: int
) -> Json:
    """Creates and floors, interleaved; adds the time and memory measures; returns the layout."""
    progress("warm-up create (also gives the layout the floor writes)")
    layout = create_once(spec.parent, base / "roots", "warmup", creates=1)
    creates, floors = interleaved(layout, spec, artifacts, base, prefix="", workers=workers)
    warm = warm_of(creates, "times_ms")
    floor = (
        f"read + SHA-256 of spec and {len(artifacts)} artifacts once, + write/fsync of "
        f"{len(layout['files'])} files and {len(layout['dirs']) + 2} directory fsyncs",
        warm_of(floors, "total_ms"),
    )
    result.add(
        "create.limits_warm",
        f"create at the limits ({spec.stat().st_size} B spec, {len(artifacts)} artifacts of "
        f"{artifacts[0].bytes // KIB} KiB), warm process",
        warm,
        floor=floor,
        upstream="376 ms (floor ~190 ms)",
        target="within 1.3x of our floor",
        met=median(warm) / median(floor[1]) <= 1.3,
    )
    result.add(
        "create.limits_cold",
        "create at the limits, first create in a fresh process (CLI case)",
        [answer["times_ms"][0] for answer in creates],
        floor=floor,
        upstream="376 ms",
    )
    result.add(
        "create.limits_warm_cpu",
        "CPU time (user + system, measuring thread) of the warm create at the limits",
        warm_of(creates, "cpu_ms"),
        floor=(
            "CPU time of the same floor (read + SHA-256, write/fsync)",
            warm_of(floors, "cpu_ms"),
        ),
        notes="robust to disk load from other processes, unlike the wall times",
    )
    for measure, label, key in (
        ("floor.read_hash", "floor part: read + SHA-256 of spec and artifacts once", "hash_ms"),
        (
            "floor.write_fsync",
            "floor part: write + fsync of the same files, one fsync per directory (at once)",
            "write_ms",
        ),
    ):
        result.add(measure, label, warm_of(floors, key))
    growth = [growth_mib(answer) for answer in creates]
    result.add(
        "create.rss_growth",
        "peak RSS growth over a cold create at the limits (VmHWM - RSS before)",
        growth,
        unit="MiB",
        upstream="+35 MiB",
        target="< 32 MiB",
        met=median(growth) < 32,
    )
    warm_growth = [growth_mib(answer, 1) for answer in creates]
    result.add(
        "create.rss_growth_warm",
        "peak RSS growth over a warm create at the limits",
        warm_growth,
        unit="MiB",
        target="< 32 MiB",
        met=median(warm_growth) < 32,
    )
    result.extra["files_written"] = len(layout["files"])
    result.extra["rss_before_mib"] = median([a["rss_before_kib"] / KIB for a in creates])
    return layout


def small_spec(
    result: Result,
    base: Path,
    artifacts: Sequence[ArtifactFile],
    *,
    size: int,
    tasks: int,
    workers: int,
    suffix: str = "",
) -> None:
    """A 64 KiB spec (the size the upstream TypeScript create was compared at), beside its own
    floor: what a create costs when the spec is small and fixed costs dominate.

    Cold and warm creates as above, plus ``import_ms``: the first import of the CLI
    (``entrypoints.cli``) in the fresh process. Per-process cost = import + (cold - warm):
    what a CLI create pays once and a long-lived process (the main Pi session) never pays
    again.
    """
    label = f"{size // KIB}KiB{suffix}"
    project = base / f"project-{label}"
    spec = write_spec(project, build_spec(size, tasks=tasks, artifacts=artifacts))
    progress(f"{label} spec: warm-up create")
    layout = create_once(project, base / "roots", f"{label}-warmup", creates=1)
    creates, floors = interleaved(
        layout, spec, artifacts, base, prefix=f"{label}-", workers=workers
    )
    warm = warm_of(creates, "times_ms")
    cold = [answer["times_ms"][0] for answer in creates]
    imports = [answer["import_ms"] for answer in creates]
    floor = (
        f"read + SHA-256 of the {label} spec and {len(artifacts)} artifacts once, + write/fsync "
        f"of {len(layout['files'])} files and {len(layout['dirs']) + 2} directory fsyncs",
        warm_of(floors, "total_ms"),
    )
    held = (
        f"{len(artifacts)} artifacts of {artifacts[0].bytes // KIB} KiB"
        if artifacts
        else "no artifact"
    )
    what = f"{size // KIB}KiB spec, {tasks} tasks, {held}"
    result.add(f"create.spec{label}_warm", f"create, {what}, warm process", warm, floor=floor)
    result.add(
        f"create.spec{label}_cold",
        f"create, {what}, first create in a fresh process",
        cold,
        floor=floor,
    )
    result.add(
        f"create.spec{label}_import",
        "first import of the CLI (entrypoints.cli) in a fresh process, before a create starts",
        imports,
    )
    result.add(
        f"create.spec{label}_warm_cpu",
        f"CPU time (user + system, measuring thread) of the warm create, {what}",
        warm_of(creates, "cpu_ms"),
        floor=("CPU time of the same floor", warm_of(floors, "cpu_ms")),
    )
    per_process = [i + c - w for i, c, w in zip(imports, cold, warm, strict=True)]
    result.add(
        f"create.spec{label}_per_process",
        f"per-process cost of a {label} create: import + (cold - warm create)",
        per_process,
    )
    cli = [i + c for i, c in zip(imports, cold, strict=True)]
    result.extra[f"spec{label}"] = {
        "spec_bytes": size,
        "tasks": tasks,
        "artifacts": len(artifacts),
        "warm_ms": warm,
        "cold_ms": cold,
        "import_ms": imports,
        "floor_ms": floor[1],
        "per_process_share_of_cli_create": median(per_process) / median(cli),
    }
    progress(
        f"{label} spec: warm {median(warm):.0f} ms, cold {median(cold):.0f} ms, import "
        f"{median(imports):.0f} ms, floor {median(floor[1]):.0f} ms"
    )


def rss_scan(
    result: Result,
    base: Path,
    points: Sequence[tuple[Sequence[ArtifactFile], int]],
    *,
    size: int,
    tasks: int,
    workers: int,
) -> None:
    """Peak RSS growth of a cold create against the number and size of artifacts."""
    rows: list[Json] = []
    for artifacts, each in points:
        label = f"{len(artifacts)}x{each // KIB}KiB"
        project = base / f"project-{label}"
        write_spec(project, build_spec(size, tasks=tasks, artifacts=artifacts))
        answers = [create_once(project, base / "roots", f"s{label}-{w}") for w in range(workers)]
        values = [growth_mib(answer) for answer in answers]
        result.add(
            f"create.rss_growth_{label}",
            f"peak RSS growth, cold create, {len(artifacts)} artifacts of {each // KIB} KiB "
            f"({size} B spec)",
            values,
            unit="MiB",
            target="< 32 MiB",
            met=median(values) < 32,
        )
        rows.append(
            {
                "artifacts": len(artifacts),
                "artifact_bytes": each,
                "total_mib": len(artifacts) * each / MIB,
                "growth_mib": values,
                "warm_ms": warm_of(answers, "times_ms"),
            }
        )
        progress(f"RSS growth at {label}: {median(values):.1f} MiB")
    result.extra["rss_scan"] = rows


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(NAME, "create_squad at the limits: time and peak memory.", argv)
    result = Result(NAME, quick=args.quick)
    if args.quick:
        size, tasks, count, each, workers, rss_workers = 64 * KIB, 16, 16, 16 * KIB, 1, 1
        scan, big = [2, 8], (2, 1 * MIB)
    else:
        size, tasks, count, each, workers, rss_workers = MIB, 128, 1024, 256 * KIB, 5, 3
        scan, big = [10, 100, 1000], (10, 8 * MIB)
    with scratch(NAME, keep=args.keep) as base:
        progress(f"generating {count} artifacts of {each} B")
        artifacts = make_artifacts(base / "artifacts", count, each)
        spec = write_spec(base / "project", build_spec(size, tasks=tasks, artifacts=artifacts))
        limits(result, base, spec, artifacts, workers)
        small_size = 16 * KIB if args.quick else 64 * KIB
        small_spec(
            result, base, artifacts[:10], size=small_size, tasks=tasks, workers=max(workers, 3)
        )
        # The small spec of the side-by-side runs against upstream (issue 34): fixed costs only.
        small_spec(
            result, base, [], size=small_size, tasks=3, workers=max(workers, 3), suffix="_3tasks"
        )
        big_artifacts = make_artifacts(base / "big", big[0], big[1], seed="big")
        points = [(artifacts[:n], each) for n in scan] + [(big_artifacts, big[1])]
        rss_scan(result, base, points, size=size, tasks=tasks, workers=rss_workers)
        result.extra.update(
            {"spec_bytes": size, "tasks": tasks, "artifacts": count, "artifact_bytes": each}
        )
    return result.finish(args.results_dir)


if __name__ == "__main__":
    raise SystemExit(main())
