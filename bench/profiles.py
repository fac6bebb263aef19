"""cProfile of the paths whose targets are missed, in process, on the same inputs as the
benchmarks: ``uv run python -m bench.profiles``. Writes ``profiles.json`` (rendered by
``bench.report``): per path, the functions with the most cumulative time.

* create at the limits (warm: a second create in this process);
* a 33-chunk full read through the fake-Pi harness (execute_tool + message_end per chunk);
* 100 ``validate_task_attestation`` calls on one complete attestation;
* the scheduler driving the 128-task legacy squad to review.

Profiling inflates Python-heavy code relative to system calls; read the rows as shares.
"""

from __future__ import annotations

import cProfile
import hashlib
import pstats
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from adapters.store.files import FileStore
from bench.common import REPO, Json, Result, ms_since, parse_args, progress, scratch
from bench.harness_read import harness_run
from bench.published import publish_spec
from bench.scheduler_drive import drive
from bench.scheduler_legacy import LEGACY_ID, write_legacy
from bench.workspace import (
    KIB,
    MIB,
    Adapters,
    attest,
    auditor_for,
    build_spec,
    catalog_for,
    create,
    make_artifacts,
    publisher_for,
    write_spec,
)

NAME = "profiles"
ROWS = 22


def _short(path: str) -> str:
    marker = "site-packages/"
    if marker in path:
        return path.split(marker, 1)[1]
    try:
        return str(Path(path).resolve().relative_to(REPO))
    except ValueError:
        return Path(path).name


def profile(title: str, action: Callable[[], object]) -> Json:
    profiler = cProfile.Profile()
    begin = time.perf_counter_ns()
    profiler.enable()
    action()
    profiler.disable()
    total = ms_since(begin)
    stats = pstats.Stats(profiler)
    entries = stats.stats  # type: ignore[attr-defined]
    rows = []
    for (path, line, function), (calls, _primitive, own, cumulative, _callers) in entries.items():
        name = function if path == "~" else f"{_short(path)}:{line}({function})"
        rows.append(
            {
                "function": name,
                "calls": calls,
                "tottime_ms": own * 1000,
                "cumtime_ms": cumulative * 1000,
            }
        )
    rows.sort(key=lambda row: row["cumtime_ms"], reverse=True)
    progress(f"{title}: {total:.0f} ms under the profiler")
    return {"title": title, "total_ms": total, "rows": rows[:ROWS]}


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(NAME, "cProfile of the paths whose targets are missed.", argv)
    result = Result(NAME, quick=args.quick)
    if args.quick:
        size, count, each, tasks = 64 * KIB, 8, 16 * KIB, 8
    else:
        size, count, each, tasks = MIB, 1024, 256 * KIB, 128
    adapters = Adapters.real()
    sections: list[Json] = []
    with scratch(NAME, keep=args.keep) as base:
        artifacts = make_artifacts(base / "artifacts", count, each)
        data = build_spec(size, tasks=tasks, artifacts=artifacts)
        project = base / "project"
        write_spec(project, data)
        sha = hashlib.sha256(data).hexdigest()
        create(
            publisher_for(adapters, base / "warm"),
            catalog_for(base / "warm", project),
            project,
            sha,
        )
        publisher = publisher_for(adapters, base / "root")
        catalog = catalog_for(base / "root", project)
        sections.append(
            profile(
                f"create at the limits ({size} B, {tasks} tasks, {count} artifacts), warm",
                lambda: create(publisher, catalog, project, sha),
            )
        )
        plain = build_spec(size, tasks=tasks)
        published = publish_spec(adapters, base / "read-root", base / "read-project", plain)
        sections.append(
            profile(
                "full read through the harness (in process), every chunk",
                lambda: harness_run(adapters, published, "t001", 0),
            )
        )
        attest(adapters, published, "t002")
        store = FileStore(fs=adapters.fs, locks=adapters.locks, root=str(base / "read-root"))
        auditor = auditor_for(adapters, store)
        squad = store.snapshot(published.squad.id).squad
        task = next(t for t in published.tasks if t.id == "t002")

        def validations() -> None:
            for _ in range(100):
                auditor.validate_task_attestation(squad, task)

        sections.append(
            profile("100 x validate_task_attestation (no shared canonical read)", validations)
        )
        (base / "legacy-project").mkdir()
        write_legacy(base / "legacy-root", base / "legacy-project", tasks, min(64, tasks))
        sections.append(
            profile(
                f"scheduler: legacy squad of {tasks} tasks to review",
                lambda: drive(adapters, base / "legacy-root", LEGACY_ID, tasks),
            )
        )
    for section in sections:
        result.add(f"profile.{len(result.measures)}", section["title"], [section["total_ms"]])
    result.extra["profiles"] = sections
    return result.finish(args.results_dir)


if __name__ == "__main__":
    raise SystemExit(main())
