"""(10) Delegation in process: the `delegate` host and the worker's evidence broker over the
real file store (``adapters/delegation/store.py``) on a scratch directory.

A session is built the way a parent builds one: ``capture`` requests of 50 paths each (the
request schema allows 64) until the grant's 200 sources are held, then ``run`` requests of
8 jobs (the schema's maximum per run), each job citing 4 of the sources, started on the fake
worker runtime (``tests.fakes.delegation.FakeWorkerRuntime``: no process, the lease recorded).
Measured, each beside a floor taken in the same round:

* ``capture`` of 200 sources (4 requests); floor: what the store must do for them at least:
  one stable read and SHA-256 of each file, each snapshot created (fsynced) and made
  read-only, and one durable atomic write per request of as many bytes as the request wrote;
* ``run`` admission of 8 jobs into a session holding 200 sources; floor: reading and
  decoding the whole state as one plain JSON document, and one durable atomic write of as many
  bytes as the admission wrote;
* a broker ``read_source`` round trip (``admit_tool`` then ``read_source``, as the worker's
  bridge serves one call); floor: that atomic write and a read and SHA-256 of the source;
* ``collect`` of 32 ready jobs (4 batches of 8); floor: reading and decoding the whole state
  as one plain JSON document once per collect (a bare JSON round trip);
* the store's write per broker call, bytes and time, at a small session (1 source, 1 job)
  and at the session's limits (200 sources, 32 batches of 8 jobs, one job with 95 recorded
  tool outcomes), the small session's figure as the floor. Target: flat within 2x.

"Bytes written" is the size of every file under the session's directory that the operation
created or replaced (the store keeps a head, ``state.json``, and content-addressed parts:
``adapters/delegation/store_parts.py``).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TypeVar

from adapters.delegation.runtime import ThreadWakeup
from adapters.delegation.store import FileDelegationStore
from adapters.delegation.store_codec import encode_state
from application.delegation.broker import EvidenceBroker
from application.delegation.host import DelegationHost
from application.delegation.transactions import SessionPorts
from bench.common import Json, Result, median, ms_since, parse_args, progress, scratch
from bench.workspace import Adapters
from domain.delegation.policy import BatchGrant, Grant, SessionGrant
from tests.fakes.delegation import FakeWorkerRuntime, FixedGrants, outcome, report

T = TypeVar("T")
NAME = "delegation_host"
SESSION = "bench"
SOURCES = 200
PATHS_PER_CAPTURE = 50
JOBS_PER_RUN = 8
SOURCES_PER_JOB = 4
FULL_BATCHES = 32
FULL_TOOL_CALLS = 95


def bench_grant(project: Path) -> Grant:
    """The grant a person gives a session that runs 32 jobs at once: the schema's 8 jobs per
    batch, 32 batches, 32 active jobs and an allowance large enough for all of them."""
    return Grant(
        source_roots=(str(project),),
        batch=BatchGrant(max_jobs=JOBS_PER_RUN, max_requests=JOBS_PER_RUN * 4),
        session=SessionGrant(
            max_active_jobs=32, max_batches=FULL_BATCHES, allowance_requests=FULL_BATCHES * 32
        ),
    )


class Session:
    """One delegation session on the real store under ``base``: the host, its fake workers."""

    def __init__(self, adapters: Adapters, base: Path, project: Path) -> None:
        self.adapters = adapters
        self.root = base
        self.store = FileDelegationStore(adapters.fs, adapters.locks, str(base))
        self.runtime = FakeWorkerRuntime()
        self.wakeup = ThreadWakeup()
        ports = SessionPorts(
            self.store,
            self.runtime,
            FixedGrants(bench_grant(project)),
            adapters.fs,
            adapters.clock,
            self.wakeup,
        )
        self.host = DelegationHost(session=SESSION, ports=ports, ids=adapters.ids, cwd=str(project))
        self.directory = Path(self.store.session_dir(SESSION))
        self.state_file = base / "whole-state.json"

    def whole_state(self) -> Path:
        """The session's state as one plain JSON document, for the floors that decode it."""
        state = self.store.snapshot(SESSION)
        assert state is not None
        self.state_file.write_bytes(encode_state(state))
        return self.state_file

    def files(self) -> dict[str, tuple[int, int, int]]:
        """The state's files (not the captured snapshots): identity, time and size."""
        found = {}
        for directory, subdirectories, names in os.walk(self.directory):
            if "sources" in subdirectories:
                subdirectories.remove("sources")
            for name in names:
                info = os.lstat(os.path.join(directory, name))
                found[os.path.join(directory, name)] = (info.st_ino, info.st_mtime_ns, info.st_size)
        return found

    def timed(self, action: Callable[[], T]) -> tuple[T, float, int]:
        """``action``'s answer, its time, and the bytes of the state files it created or
        replaced."""
        before = self.files()
        begin = time.perf_counter_ns()
        answer = action()
        took = ms_since(begin)
        wrote = sum(e[2] for path, e in self.files().items() if before.get(path) != e)
        return answer, took, wrote

    def broker_call(self, job_id: str, source_id: str) -> tuple[float, int]:
        """One broker call as the worker's bridge serves it: ``admit_tool``, ``read_source``."""
        broker = EvidenceBroker(self.store, self.runtime.lease(job_id), self.adapters.clock)

        def call() -> None:
            broker.admit_tool("read_source")
            broker.read_source({"sourceId": source_id, "lineStart": 1, "lineEnd": 40})

        _, took, wrote = self.timed(call)
        return took, wrote

    def capture(self, paths: Sequence[str]) -> list[str]:
        answer = self.host.handle({"version": 1, "op": "capture", "paths": list(paths)})
        return [source["sourceId"] for source in answer["sources"]]

    def run(self, key: str, source_ids: Sequence[str], jobs: int = JOBS_PER_RUN) -> Json:
        documents = [run_job(f"{key}-{n}", source_ids, n) for n in range(jobs)]
        request = {
            "version": 1,
            "op": "run",
            "objective": f"find the regression ({key})",
            "requirements": [{"id": "R1", "text": "explain the cause"}],
            "jobs": documents,
            "limits": {"maxRequests": 4, "deadlineMs": 600_000},
        }
        answer: Json = self.host.handle(request)
        return answer

    def report_all(self, admitted: Json) -> None:
        for row in admitted["jobs"]:
            self.host.report(self.runtime.lease(row["jobId"]), outcome(report()))

    def collect(self, batch_id: str, wait_ms: int = 0) -> Json:
        request = {"version": 1, "op": "collect", "batchId": batch_id, "waitMs": wait_ms}
        answer: Json = self.host.handle(request)
        return answer


def run_job(key: str, source_ids: Sequence[str], position: int) -> Json:
    count = len(source_ids)
    cited = [source_ids[(position * SOURCES_PER_JOB + k) % count] for k in range(SOURCES_PER_JOB)]
    return {
        "key": key,
        "mode": "investigate",
        "question": f"Can the cache keep a stale value? ({key})",
        "requirements": ["R1"],
        "sourceIds": list(dict.fromkeys(cited)),
        "acceptance": "Name the path and evidence, or what prevents a conclusion.",
        "reason": "independent source investigation",
    }


def write_sources(project: Path, count: int) -> list[str]:
    """``count`` Python-like files of about 6 KiB each (200 lines)."""
    names = []
    for index in range(count):
        name = f"module_{index:03d}.py"
        lines = (f"value_{line} = compute({index}, {line})  # line {line}\n" for line in range(200))
        (project / name).write_text("".join(lines), encoding="utf-8")
        names.append(name)
    return names


def fill_sources(session: Session, names: Sequence[str]) -> list[str]:
    ids: list[str] = []
    for start in range(0, len(names), PATHS_PER_CAPTURE):
        ids += session.capture(names[start : start + PATHS_PER_CAPTURE])
    return ids


# -- floors ---------------------------------------------------------------------------------


def capture_floor(adapters: Adapters, project: Path, target: Path, states: Sequence[bytes]) -> None:
    """The store's minimum for capturing ``project``'s files: read and hash each, create each
    snapshot durably and read-only, and one atomic write per request of its state bytes."""
    fs = adapters.fs
    target.mkdir(parents=True)
    for name in sorted(path.name for path in project.iterdir()):
        data = fs.read_stable(str(project / name), max_bytes=1 << 20).data
        digest = hashlib.sha256(data).hexdigest()
        fs.create_file_exclusive(str(target / digest), data, 0o600)
        fs.mark_read_only(str(target / digest))
    for data in states:
        fs.write_atomic(str(target / "state.json"), data)


def write_floor(adapters: Adapters, target: Path, data: bytes) -> float:
    """One durable atomic write of ``data`` (temp file, fsync, rename, directory fsync)."""
    begin = time.perf_counter_ns()
    adapters.fs.write_atomic(str(target), data)
    return ms_since(begin)


def json_round_trip(path: Path) -> float:
    """Reading a state file and decoding it as plain JSON: the least a collect must do."""
    begin = time.perf_counter_ns()
    json.loads(path.read_bytes())
    return ms_since(begin)


# -- measures -------------------------------------------------------------------------------


def measure_round(
    adapters: Adapters, base: Path, project: Path, names: Sequence[str], samples: Json
) -> None:
    """One round of capture, run, broker call and collect, each beside its floor."""
    base.mkdir()
    session = Session(adapters, base / "root", project)
    states: list[bytes] = []
    ids: list[str] = []
    elapsed = 0.0
    for start in range(0, len(names), PATHS_PER_CAPTURE):
        chosen = names[start : start + PATHS_PER_CAPTURE]
        captured, took, wrote = session.timed(partial(session.capture, chosen))
        ids += captured
        elapsed += took
        states.append(b"x" * wrote)
    samples["capture"].append(elapsed)
    begin = time.perf_counter_ns()
    capture_floor(adapters, project, base / "capture-floor", states)
    samples["capture_floor"].append(ms_since(begin))

    batches: list[Json] = []
    for batch in range(4):
        admitted, took, wrote = session.timed(partial(session.run, f"b{batch}", ids))
        batches.append(admitted)
        samples["run"].append(took)
        samples["run_floor"].append(
            json_round_trip(session.whole_state())
            + write_floor(adapters, base / "floor.json", b"x" * wrote)
        )
    first_job = batches[0]["jobs"][0]["jobId"]
    for _ in range(4):
        took, wrote = session.broker_call(first_job, ids[0])
        samples["broker"].append(took)
        floor_begin = time.perf_counter_ns()
        hashlib.sha256((project / names[0]).read_bytes()).hexdigest()
        samples["broker_floor"].append(
            ms_since(floor_begin) + write_floor(adapters, base / "floor.json", b"x" * wrote)
        )
    for admitted in batches:
        session.report_all(admitted)
    before = time.perf_counter_ns()
    items = sum(len(session.collect(admitted["batchId"])["items"]) for admitted in batches)
    samples["collect"].append(ms_since(before))
    whole = session.whole_state()
    samples["collect_floor"].append(sum(json_round_trip(whole) for _ in batches))
    if items != 4 * JOBS_PER_RUN:
        raise RuntimeError(f"collect gave {items} items, {4 * JOBS_PER_RUN} expected")


def growth(
    adapters: Adapters, base: Path, project: Path, names: Sequence[str], *, quick: bool
) -> Json:
    """Bytes and time per broker call at a small session and at the session's limits, the
    two sessions' calls taken in turn so that a change of the machine's load falls on both."""
    calls = 15
    small = Session(adapters, base / "small", project)
    (one,) = small.capture(names[:1])
    small_job = small.run("small", [one], jobs=1)["jobs"][0]["jobId"]

    full = Session(adapters, base / "full", project)
    ids = fill_sources(full, names)
    batches = 4 if quick else FULL_BATCHES
    admitted = [full.run(f"f{batch}", ids) for batch in range(batches)]
    for done in admitted[:-1]:
        full.report_all(done)
    full_job = admitted[-1]["jobs"][0]["jobId"]
    history = 10 if quick else FULL_TOOL_CALLS - calls
    for _ in range(history):
        full.broker_call(full_job, ids[0])
    turns = [
        (small.broker_call(small_job, one), full.broker_call(full_job, ids[0]))
        for _ in range(calls)
    ]
    small_ms, small_bytes = [s[0] for s, _ in turns], [float(s[1]) for s, _ in turns]
    full_ms, full_bytes = [f[0] for _, f in turns], [float(f[1]) for _, f in turns]
    progress(
        f"broker call: small {median(small_ms):.2f} ms, {median(small_bytes):.0f} B; "
        f"full {median(full_ms):.2f} ms, {median(full_bytes):.0f} B"
    )
    return {
        "small_ms": small_ms,
        "small_bytes": small_bytes,
        "full_ms": full_ms,
        "full_bytes": full_bytes,
        "full_batches": batches,
        "full_jobs": batches * JOBS_PER_RUN,
        "full_tool_outcomes": history + calls,
    }


def add_rows(result: Result, samples: Json, grown: Json) -> None:
    def row(key: str, label: str, floor_label: str, target: float | None) -> None:
        ours = samples[key]
        floor = samples[f"{key}_floor"]
        ratio = median(ours) / median(floor)
        result.add(
            f"delegation.{key}",
            label,
            ours,
            floor=(floor_label, floor),
            target=None if target is None else f"≤ {target:g}x floor",
            met=None if target is None else ratio <= target,
        )

    row(
        "capture",
        f"capture of {SOURCES} sources ({SOURCES // PATHS_PER_CAPTURE} requests of "
        f"{PATHS_PER_CAPTURE} paths), empty session",
        "stable read + SHA-256 per file, snapshot created + fsynced + read-only, one atomic "
        "write per request",
        3.0,
    )
    row(
        "run",
        f"run admission of {JOBS_PER_RUN} jobs, session holding {SOURCES} sources",
        "read + JSON decode of the whole state, one atomic write of the bytes it wrote",
        4.0,
    )
    row(
        "broker",
        "broker read_source round trip (admit_tool + read_source), 200 sources, 32 jobs",
        "SHA-256 of the source + one atomic write of the bytes the call wrote",
        3.0,
    )
    row(
        "collect",
        "collect of 32 ready jobs (4 batches of 8)",
        "read + JSON decode of the whole state, once per collect",
        None,
    )
    full = f"{grown['full_jobs']} jobs, {grown['full_tool_outcomes']} tool outcomes on one"
    result.add(
        "delegation.broker_bytes_full",
        f"state bytes the store writes per broker call at the limits (200 sources, {full})",
        grown["full_bytes"],
        unit="B",
        floor=("same call, 1 source and 1 job", grown["small_bytes"]),
        target="flat: ≤ 2x the small session",
        met=median(grown["full_bytes"]) <= 2 * median(grown["small_bytes"]),
    )
    result.add(
        "delegation.broker_ms_full",
        f"broker call time at the limits (200 sources, {full})",
        grown["full_ms"],
        floor=("same call, 1 source and 1 job", grown["small_ms"]),
        target="flat: ≤ 2x the small session",
        met=median(grown["full_ms"]) <= 2 * median(grown["small_ms"]),
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(NAME, "The delegate host and broker over the real store.", argv)
    result = Result(NAME, quick=args.quick)
    rounds = 1 if args.quick else 5
    adapters = Adapters.real()
    keys = ("capture", "run", "broker", "collect")
    samples: Json = {f"{key}{end}": [] for key in keys for end in ("", "_floor")}
    with scratch(NAME, keep=args.keep) as base:
        project = base / "project"
        project.mkdir()
        names = write_sources(project, SOURCES)
        for position in range(rounds):
            measure_round(adapters, base / f"round-{position}", project, names, samples)
            progress(f"round {position + 1}/{rounds}: capture {samples['capture'][-1]:.0f} ms")
        grown = growth(adapters, base / "growth", project, names, quick=args.quick)
    add_rows(result, samples, grown)
    result.extra["growth"] = {k: v for k, v in grown.items() if not isinstance(v, list)}
    return result.finish(args.results_dir)


if __name__ == "__main__":
    raise SystemExit(main())
