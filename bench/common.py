"""What every benchmark shares: arguments, statistics, the result file, the machine description.

A result file (``<results dir>/<name>.json``) holds::

    {"name", "command", "quick", "date", "machine": {...}, "seconds",
     "measures": [{"id", "label", "unit", "median", "min", "max", "n", "p99"?,
                   "floor"?: {"label", "median", "min", "max", "n", "unit"}, "ratio"?,
                   "upstream"?, "target"?, "met"?, "notes"?}],
     "extra": {...}}

``ratio`` is the measure's median over its floor's median, both taken in the same run (the
samples are interleaved where the script can). ``met`` is ``null`` where no target is set.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS_ENVIRONMENT_VARIABLE = "PI_SQUAD_BENCH_RESULTS"
SCRATCH_ENVIRONMENT_VARIABLE = "PI_SQUAD_BENCH_TMP"
DEFAULT_RESULTS_DIR = REPO / "bench" / "results"
SCHEMA_VERSION = 1

Json = dict[str, Any]


# -- arguments ----------------------------------------------------------------------------------


def parse_args(
    name: str, description: str, argv: Sequence[str] | None = None
) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=f"python -m bench.{name}", description=description)
    parser.add_argument("--quick", action="store_true", help="tiny sizes (CI smoke run)")
    parser.add_argument(
        "--results-dir",
        type=Path,
        default=None,
        help=f"where {name}.json goes (default: ${RESULTS_ENVIRONMENT_VARIABLE} or bench/results)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    return parser.parse_args(argv)


def results_dir(chosen: Path | None) -> Path:
    if chosen is not None:
        return chosen
    configured = os.environ.get(RESULTS_ENVIRONMENT_VARIABLE)
    return Path(configured) if configured else DEFAULT_RESULTS_DIR


@contextlib.contextmanager
def scratch(name: str, *, keep: bool = False) -> Iterator[Path]:
    """A fresh directory on the real file system (``$PI_SQUAD_BENCH_TMP`` or the system's)."""
    base = os.environ.get(SCRATCH_ENVIRONMENT_VARIABLE) or None
    path = Path(tempfile.mkdtemp(prefix=f"pi-squad-bench-{name}-", dir=base))
    try:
        yield path
    finally:
        if keep:
            print(f"kept {path}", file=sys.stderr)
        else:
            shutil.rmtree(path, ignore_errors=True)


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- statistics ---------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default); ``q`` in [0, 100]."""
    if not values:
        raise ValueError("no samples")
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def median(values: Sequence[float]) -> float:
    return percentile(values, 50.0)


def summary(values: Sequence[float], *, p99: bool = False) -> Json:
    out: Json = {
        "median": median(values),
        "min": min(values),
        "max": max(values),
        "n": len(values),
    }
    if p99:
        out["p99"] = percentile(values, 99.0)
    return out


def loglog_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of log(y) on log(x): the observed growth order."""
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    mx = sum(lx) / len(lx)
    my = sum(ly) / len(ly)
    den = sum((x - mx) ** 2 for x in lx)
    return sum((x - mx) * (y - my) for x, y in zip(lx, ly, strict=True)) / den


def growth_order(slope: float) -> str:
    if slope < -0.25:
        return "decreasing (noise dominates)"
    if slope < 0.1:
        return "about constant"
    if slope < 0.8:
        return "sublinear: a fixed cost dominates"
    if slope < 1.1:
        return "about linear"
    if slope < 1.75:
        return "superlinear: between linear and quadratic"
    return "about quadratic or worse"


# -- timing -------------------------------------------------------------------------------------


def now_ms() -> float:
    return time.perf_counter_ns() / 1e6


def ms_since(begin_ns: int) -> float:
    """Milliseconds since ``begin_ns``, a ``time.perf_counter_ns()`` reading."""
    return (time.perf_counter_ns() - begin_ns) / 1e6


def timed_ms(action: Callable[[], object]) -> float:
    start = time.perf_counter_ns()
    action()
    return ms_since(start)


def run_json(argv: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float) -> Json:
    """Run a worker process and decode the JSON object on the last line of its stdout."""
    completed = subprocess.run(
        list(argv),
        capture_output=True,
        text=True,
        env=None if env is None else dict(env),
        timeout=timeout,
        check=False,
        cwd=REPO,
    )
    if completed.returncode != 0:
        raise RuntimeError(
            f"worker {argv} exited with {completed.returncode}:\n{completed.stderr[-4000:]}"
        )
    lines = [line for line in completed.stdout.splitlines() if line.strip()]
    decoded: Json = json.loads(lines[-1])
    return decoded


# -- the machine --------------------------------------------------------------------------------


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _cpu_model() -> str:
    for line in _read_text("/proc/cpuinfo").splitlines():
        if line.lower().startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _memory_mib() -> int | None:
    for line in _read_text("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return None


def _file_system_of(path: str) -> str | None:
    best: tuple[int, str] | None = None
    for line in _read_text("/proc/mounts").splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        mount, kind = fields[1], fields[2]
        if (path == mount or path.startswith(mount.rstrip("/") + "/")) and (
            best is None or len(mount) > best[0]
        ):
            best = (len(mount), kind)
    return best[1] if best else None


def machine() -> Json:
    affinity = getattr(os, "sched_getaffinity", None)
    cpus = len(affinity(0)) if affinity is not None else os.cpu_count()
    scratch_base = os.environ.get(SCRATCH_ENVIRONMENT_VARIABLE) or tempfile.gettempdir()
    info: Json = {
        "nproc": cpus,
        "memory_mib": _memory_mib(),
        "cpu_model": _cpu_model(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "scratch_fs": _file_system_of(os.path.realpath(scratch_base)),
        "node": None,
        "pi": None,
    }
    try:
        from adapters.pi_runtime import PiRuntimeUnavailable, locate_runtime
        from entrypoints.concerns.setting_reads import runtime_dir

        runtime = locate_runtime(None, os.environ, runtime_override=runtime_dir(os.environ))
        info["node"] = runtime.node_version
        info["pi"] = runtime.pi_version
    except PiRuntimeUnavailable:
        pass
    return info


def system_load() -> Json:
    """The 1-minute load average and CPU pressure (``some``, avg60): how busy the machine was."""
    load: Json = {"loadavg_1m": None, "cpu_pressure_avg60": None}
    getloadavg = getattr(os, "getloadavg", None)
    if getloadavg is not None:
        load["loadavg_1m"] = round(getloadavg()[0], 2)
    for line in _read_text("/proc/pressure/cpu").splitlines():
        if line.startswith("some"):
            fields = dict(part.split("=", 1) for part in line.split()[1:])
            load["cpu_pressure_avg60"] = float(fields["avg60"])
    return load


# -- the result file ----------------------------------------------------------------------------


class Result:
    """One benchmark's measures, written as ``<name>.json``."""

    def __init__(self, name: str, *, quick: bool) -> None:
        self.name = name
        self.quick = quick
        self.command = f"uv run python -m bench.{name}" + (" --quick" if quick else "")
        self.measures: list[Json] = []
        self.extra: Json = {}
        self._started = time.monotonic()
        self._load_at_start = system_load()

    def add(
        self,
        measure_id: str,
        label: str,
        samples: Sequence[float],
        *,
        unit: str = "ms",
        floor: tuple[str, Sequence[float]] | None = None,
        floor_unit: str | None = None,
        upstream: str | None = None,
        target: str | None = None,
        met: bool | None = None,
        notes: str | None = None,
        p99: bool = False,
    ) -> Json:
        """Record one measure. ``floor``: (label, samples) of its floor, same run."""
        entry: Json = {"id": measure_id, "label": label, "unit": unit, **summary(samples, p99=p99)}
        if floor is not None:
            floor_label, floor_samples = floor
            entry["floor"] = {
                "label": floor_label,
                "unit": floor_unit or unit,
                **summary(floor_samples),
            }
            if entry["floor"]["median"] > 0:
                entry["ratio"] = entry["median"] / entry["floor"]["median"]
        if upstream is not None:
            entry["upstream"] = upstream
        if target is not None:
            entry["target"] = target
            entry["met"] = met
        if notes:
            entry["notes"] = notes
        self.measures.append(entry)
        return entry

    def skip(self, reason: str) -> None:
        self.extra["skipped"] = reason

    def to_json(self) -> Json:
        return {
            "schema": SCHEMA_VERSION,
            "name": self.name,
            "command": self.command,
            "quick": self.quick,
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "seconds": round(time.monotonic() - self._started, 1),
            "machine": machine(),
            "load": {"start": self._load_at_start, "end": system_load()},
            "measures": self.measures,
            "extra": self.extra,
        }

    def write(self, directory: Path) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        target = directory / f"{self.name}.json"
        staging = directory / f".{self.name}.json.tmp"
        staging.write_text(json.dumps(self.to_json(), indent=2) + "\n", encoding="utf-8")
        os.replace(staging, target)
        progress(f"wrote {target}")
        return target

    def finish(self, chosen: Path | None) -> int:
        """Write the result to ``chosen`` (else the configured directory); the exit status."""
        self.write(results_dir(chosen))
        return 0


def validate_result(document: object) -> list[str]:
    """Problems with a result document's shape (the smoke test's check); empty when well-formed."""
    problems: list[str] = []
    if not isinstance(document, dict):
        return ["not a JSON object"]
    for key, kind in (
        ("name", str),
        ("command", str),
        ("quick", bool),
        ("date", str),
        ("machine", dict),
        ("measures", list),
        ("extra", dict),
    ):
        if not isinstance(document.get(key), kind):
            problems.append(f"{key} is not a {kind.__name__}")
    measures = document.get("measures")
    if not isinstance(measures, list):
        return problems
    if not measures and "skipped" not in document.get("extra", {}):
        problems.append("no measures and no skip reason")
    for position, measure in enumerate(measures):
        if not isinstance(measure, dict):
            problems.append(f"measures[{position}] is not an object")
            continue
        for key in ("id", "label", "unit"):
            if not isinstance(measure.get(key), str):
                problems.append(f"measures[{position}].{key} is not a string")
        for key in ("median", "min", "max"):
            value = measure.get(key)
            if not isinstance(value, int | float) or not math.isfinite(value):
                problems.append(f"measures[{position}].{key} is not a finite number")
        if not isinstance(measure.get("n"), int) or measure["n"] < 1:
            problems.append(f"measures[{position}].n is not a positive integer")
        elif not measure["min"] <= measure["median"] <= measure["max"]:
            problems.append(f"measures[{position}]: median outside min-max")
        floor = measure.get("floor")
        if floor is not None and (
            not isinstance(floor, dict) or not isinstance(floor.get("median"), int | float)
        ):
            problems.append(f"measures[{position}].floor is malformed")
        if "met" in measure and measure["met"] is not None and not isinstance(measure["met"], bool):
            problems.append(f"measures[{position}].met is not a boolean")
    return problems
