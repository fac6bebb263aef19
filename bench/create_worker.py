"""One measurement in a fresh process (``python -m bench.create_worker '<json>'``), so peak RSS is
this measurement's alone. Prints one JSON object.

``{"mode": "create", "project": P, "roots": [R1, R2, ...]}``: ``create_squad`` of
``P/squad-spec.json`` once per root; the first is cold (first use of every module and schema in
this process), the later ones warm. Reports each time and each create's peak RSS growth: the
high-water mark (``VmHWM``, reset to the current RSS just before the create through
``/proc/self/clear_refs``) minus the RSS before, never below the RSS sampled every millisecond;
the files the first squad holds (for the floor); and ``import_ms``, the time the first import
of the CLI (``entrypoints.cli``) took in this fresh process. ``cpu_ms`` (both modes): the CPU
time of the measuring thread over each create or floor rep (user + system), which, unlike the
wall time, hardly moves when other processes load the machine's disk.

``{"mode": "floor", "spec": S, "artifacts": [...], "files": [[relative path, bytes], ...],
"dirs": [...], "target": T, "reps": 2}``: read and SHA-256 the spec and every artifact once,
then write and fsync the same number and sizes of files into fresh directories under ``T`` and
fsync every directory once (the durability a publication needs at least), the files at once and
then the directories at once, on up to eight threads, as the publication does. Each rep is timed.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

KIB = 1024
# The publication's own bound on the durable steps it runs at once.
_FSYNC_THREADS = 8


def maxrss_kib() -> int | None:
    """``ru_maxrss`` (kept for reference only: a child inherits its parent's value at exec)."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    value = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return value // KIB if sys.platform == "darwin" else value


def current_rss_kib() -> int | None:
    try:
        fields = Path("/proc/self/statm").read_text().split()
    except OSError:
        return None
    return int(fields[1]) * os.sysconf("SC_PAGE_SIZE") // KIB


def reset_peak_rss() -> bool:
    """Reset this process's RSS high-water mark to its current RSS (Linux >= 4.0)."""
    try:
        Path("/proc/self/clear_refs").write_bytes(b"5")
    except OSError:
        return False
    return True


def peak_rss_kib() -> int | None:
    """``VmHWM``: the RSS high-water mark of this process's address space.

    Unlike ``ru_maxrss`` it is not inherited: ``ru_maxrss`` of a freshly exec'd child already
    holds the parent's RSS at fork time, which hides a child's growth under the parent's size.
    """
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return None


class RssSampler:
    """The highest resident set size seen while running (polled every millisecond)."""

    def __init__(self) -> None:
        self.peak = current_rss_kib() or 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.wait(0.001):
            value = current_rss_kib()
            if value is not None and value > self.peak:
                self.peak = value

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        value = current_rss_kib()
        if value is not None:
            self.peak = max(self.peak, value)


def run_create(request: dict[str, Any]) -> dict[str, Any]:
    # The first import of the CLI in this process: what ``pi-squad create`` pays before it
    # starts (reported as ``import_ms``); the bench helpers import little beyond it.
    begin_import = time.perf_counter_ns()
    import entrypoints.cli  # noqa: F401

    import_ms = (time.perf_counter_ns() - begin_import) / 1e6
    from bench.workspace import SPEC_NAME, Adapters, catalog_for, create, publisher_for

    project = Path(request["project"])
    roots = [Path(root) for root in request["roots"]]
    sha256 = hashlib.sha256((project / SPEC_NAME).read_bytes()).hexdigest()
    adapters = Adapters.real()
    prepared = [(publisher_for(adapters, root), catalog_for(root, project)) for root in roots]
    gc.collect()
    before = current_rss_kib()
    times: list[float] = []
    cpu: list[float] = []
    growth: list[int | None] = []
    sampled_growth: list[int | None] = []
    exact: list[bool] = []
    squad_dir = None
    for position, (publisher, catalog) in enumerate(prepared):
        start_rss = current_rss_kib()
        exact.append(reset_peak_rss())
        with RssSampler() as sampler:
            begin = time.perf_counter_ns()
            begin_cpu = time.thread_time_ns()
            published = create(publisher, catalog, project, sha256)
            cpu.append((time.thread_time_ns() - begin_cpu) / 1e6)
            times.append((time.perf_counter_ns() - begin) / 1e6)
        peak = peak_rss_kib() if exact[-1] else None
        if start_rss is None:
            growth.append(None)
            sampled_growth.append(None)
        else:
            sampled_growth.append(sampler.peak - start_rss)
            growth.append(max(peak or 0, sampler.peak) - start_rss)
        if position == 0:
            squad_dir = Path(published.squad_dir)
        del published
        gc.collect()
    assert squad_dir is not None
    files = [
        [str(path.relative_to(squad_dir)), path.stat().st_size]
        for path in sorted(squad_dir.rglob("*"))
        if path.is_file() and not path.name.startswith(".")
    ]
    dirs = sorted(
        str(path.relative_to(squad_dir)) for path in squad_dir.rglob("*") if path.is_dir()
    )
    return {
        "times_ms": times,
        "cpu_ms": cpu,
        "import_ms": import_ms,
        "rss_before_kib": before,
        "growth_kib": growth,
        "sampled_growth_kib": sampled_growth,
        "peak_exact": exact,
        "maxrss_kib": maxrss_kib(),
        "files": files,
        "dirs": dirs,
    }


def _write_fsync(path: Path, size: int, payload: bytes) -> None:
    descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    try:
        view = memoryview(payload)[:size]
        while view:
            view = view[os.write(descriptor, view) :]
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _fsync_dir(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def run_floor(request: dict[str, Any]) -> dict[str, Any]:
    spec = Path(request["spec"])
    artifacts = [Path(path) for path in request["artifacts"]]
    files: Sequence[tuple[str, int]] = [(name, size) for name, size in request["files"]]
    dirs: Sequence[str] = request["dirs"]
    target = Path(request["target"])
    payload = b"x" * max([size for _, size in files] or [1])
    sizes = [size for _, size in files]
    payloads = [payload] * len(files)
    hash_ms: list[float] = []
    write_ms: list[float] = []
    cpu_ms: list[float] = []
    for rep in range(int(request.get("reps", 2))):
        begin_cpu = time.thread_time_ns()
        begin = time.perf_counter_ns()
        for path in (spec, *artifacts):
            with path.open("rb") as handle:
                hashlib.file_digest(handle, "sha256").hexdigest()
        hash_ms.append((time.perf_counter_ns() - begin) / 1e6)
        base = target / f"floor-{rep}"
        begin = time.perf_counter_ns()
        base.mkdir(parents=True)
        for directory in dirs:
            (base / directory).mkdir(parents=True, exist_ok=True)
        # At once, as a publication issues them (``application.concurrent_steps``): each file
        # and directory still gets its own fsync, sharing the journal's commits.
        with ThreadPoolExecutor(max_workers=_FSYNC_THREADS) as pool:
            list(pool.map(_write_fsync, [base / name for name, _ in files], sizes, payloads))
        with ThreadPoolExecutor(max_workers=_FSYNC_THREADS) as pool:
            list(pool.map(_fsync_dir, [base / directory for directory in dirs]))
        _fsync_dir(base)
        _fsync_dir(target)
        write_ms.append((time.perf_counter_ns() - begin) / 1e6)
        cpu_ms.append((time.thread_time_ns() - begin_cpu) / 1e6)
    return {
        "cpu_ms": cpu_ms,
        "hash_ms": hash_ms,
        "write_ms": write_ms,
        "total_ms": [a + b for a, b in zip(hash_ms, write_ms, strict=True)],
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    request = json.loads(args[0])
    if request["mode"] == "create":
        answer = run_create(request)
    elif request["mode"] == "floor":
        answer = run_floor(request)
    else:
        raise SystemExit(f"unknown mode {request['mode']!r}")
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
