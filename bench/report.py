"""Render the results into ``docs/benchmarks.md``: ``uv run python -m bench.report``.

The generated part sits between ``<!-- bench:begin -->`` and ``<!-- bench:end -->``; the text
around it (commentary, profiles explained, proposed fixes) is kept as written. A file without
the markers gets them appended.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path

from bench.common import REPO, Json, growth_order, results_dir

BEGIN = "<!-- bench:begin -->"
END = "<!-- bench:end -->"
DEFAULT_OUTPUT = REPO / "docs" / "benchmarks.md"
ORDER = (
    ("create_limits", "1. Create at the limits"),
    ("full_read", "2. Full read by one child"),
    ("guard", "3. Guard overhead per tool call"),
    ("attestation", "4. Attestation validation"),
    ("child_start", "5. Child start overhead"),
    ("scheduler", "6. Scheduler overhead"),
    ("scaling", "7. Scaling"),
    ("driver_idle", "8. Driver CPU while children sit idle"),
    ("flow_children", "9. Flows on real Pi, against bare children"),
    ("delegation_host", "10. Delegation host and broker over the real store"),
    ("flow_waiting", "11. Driver CPU and RSS while flow children and delegation jobs wait"),
    ("cli_start", "12. Command-line start"),
)


def number(value: float, unit: str) -> str:
    if unit == "MiB":
        return f"{value:.1f} MiB"
    magnitude = abs(value)
    if magnitude >= 100:
        text = f"{value:.0f}"
    elif magnitude >= 10:
        text = f"{value:.1f}"
    elif magnitude >= 1:
        text = f"{value:.2f}"
    else:
        text = f"{value:.3f}"
    return f"{text} {unit}"


def cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def measure_row(measure: Json, command: str) -> str:
    unit = measure["unit"]
    floor = measure.get("floor")
    floor_text = "—"
    if floor is not None:
        floor_text = f"{number(floor['median'], floor['unit'])} ({cell(floor['label'])})"
    ratio = measure.get("ratio")
    met = measure.get("met")
    verdict = "—" if "target" not in measure else ("met" if met else "**missed**")
    p99 = measure.get("p99")
    label = measure["label"] + (f". {measure['notes']}" if measure.get("notes") else "")
    return (
        "| "
        + " | ".join(
            [
                cell(label),
                number(measure["median"], unit),
                "—" if p99 is None else number(p99, unit),
                f"{number(measure['min'], unit)} – {number(measure['max'], unit)}",
                str(measure["n"]),
                floor_text,
                "—" if ratio is None or not math.isfinite(ratio) else f"{ratio:.2f}x",
                cell(measure.get("upstream", "—")),
                cell(measure.get("target", "—")),
                verdict,
                f"`{command}`",
            ]
        )
        + " |"
    )


HEADER = (
    "| measure | median | p99 | min – max | n | floor (median, same run) | ratio | "
    "upstream TS | target | verdict | command |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|"
)


SUMMARY_HEADER = (
    "| # | measure | ours: median (min – max, n) | floor, same run | ratio | target | verdict |\n"
    "|---|---|---|---|---|---|---|"
)


def summary_lines(results: Sequence[Json]) -> list[str]:
    """Every measure that carries a target, across all results, in the order of ``ORDER``."""
    by_name = {result["name"]: result for result in results}
    rows: list[str] = []
    for position, (name, _) in enumerate(ORDER, start=1):
        result = by_name.get(name)
        if result is None:
            continue
        for measure in result["measures"]:
            if "target" in measure:
                rows.append(summary_row(position, measure))
    if not rows:
        return []
    met = sum(1 for row in rows if row.endswith("| met |"))
    return [
        "",
        "### Summary against the targets",
        "",
        f"{met} of {len(rows)} targets met in this run. Every row is generated from "
        "`bench/results/*.json`; the sections below give each script's full table.",
        "",
        SUMMARY_HEADER,
        *rows,
    ]


def summary_row(position: int, measure: Json) -> str:
    unit = measure["unit"]
    floor = measure.get("floor")
    ratio = measure.get("ratio")
    ours = (
        f"{number(measure['median'], unit)} ({number(measure['min'], unit)} – "
        f"{number(measure['max'], unit)}, {measure['n']})"
    )
    cells = [
        str(position),
        cell(measure["label"]),
        ours,
        "—"
        if floor is None
        else f"{number(floor['median'], floor['unit'])} ({cell(floor['label'])})",
        "—" if ratio is None or not math.isfinite(ratio) else f"{ratio:.2f}x",
        cell(measure["target"]),
        "met" if measure.get("met") else "**missed**",
    ]
    return "| " + " | ".join(cells) + " |"


def machine_lines(results: Sequence[Json]) -> list[str]:
    machine = results[0]["machine"]
    dates = sorted(result["date"] for result in results)
    quick = any(result["quick"] for result in results)
    return [
        f"- Machine: {machine['nproc']} CPUs ({machine['cpu_model']}), "
        f"{machine['memory_mib']} MiB memory, {machine['platform']}",
        f"- Python {machine['python']}, Node {machine['node'] or 'n/a'}, "
        f"Pi {machine['pi'] or 'n/a'}; scratch file system: {machine['scratch_fs'] or 'unknown'}",
        f"- Run: {dates[0]} to {dates[-1]} (UTC)"
        + (" — **quick mode: tiny sizes, not the benchmark**" if quick else ""),
    ]


def extra_tables(name: str, result: Json) -> list[str]:
    extra = result.get("extra", {})
    lines: list[str] = []
    if extra.get("skipped"):
        lines += ["", f"Skipped: {extra['skipped']}"]
    if name == "create_limits" and extra.get("rss_scan"):
        lines += [
            "",
            "Peak RSS growth against artifact count and size (cold create, 1 MiB spec, 128 tasks; "
            "RSS before the create: "
            f"{extra.get('rss_before_mib', 0):.1f} MiB):",
            "",
            "| artifacts | each | total | RSS growth (median) | warm create (median) |",
            "|---|---|---|---|---|",
        ]
        for row in extra["rss_scan"]:
            growth = sorted(row["growth_mib"])[len(row["growth_mib"]) // 2]
            warm = sorted(row["warm_ms"])[len(row["warm_ms"]) // 2]
            lines.append(
                f"| {row['artifacts']} | {row['artifact_bytes'] // 1024} KiB | "
                f"{row['total_mib']:.0f} MiB | {growth:.1f} MiB | {warm:.0f} ms |"
            )
    if name == "guard" and isinstance(extra.get("pi_added_ms_per_call"), dict):
        added = extra["pi_added_ms_per_call"]
        batched = added.get("batched_median")
        lines += [
            "",
            "Real Pi, added per tool call by the extension after attestation (with minus without): "
            f"median {added['median']:+.2f} ms, p99 {added['p99']:+.2f} ms per call (one call "
            f"per message); tool window {added['window_median']:+.2f} ms"
            + ("" if batched is None else f"; batched (10 per message) {batched:+.2f} ms per call")
            + ".",
        ]
    if name == "guard" and isinstance(extra.get("real_pi"), str):
        lines += ["", f"Real Pi part: {extra['real_pi']}"]
    if name == "child_start" and extra.get("bridge_import_profile"):
        lines += [
            "",
            "`python -X importtime` of `pi-squad bridge --role child` (slowest top-level imports, "
            "cumulative):",
            "",
            "| module | cumulative |",
            "|---|---|",
        ]
        for row in extra["bridge_import_profile"]:
            lines.append(f"| `{row['module']}` | {row['cumulative_ms']:.0f} ms |")
    if name == "scaling" and extra.get("slopes"):
        lines += [
            "",
            "| axis | points | medians | log-log slope | growth order | linear fit |",
            "|---|---|---|---|---|---|",
        ]
        for row in extra["slopes"]:
            points = ", ".join(_size(x) for x in row["x"])
            medians = ", ".join(number(y, "ms") for y in row["median_ms"])
            lines.append(
                f"| {row['axis']} | {points} | {medians} | {row['slope']:.2f} | "
                f"{growth_order(row['slope'])} | "
                f"{_linear_fit(row['x'], row['median_ms'], row['axis'])} |"
            )
    return lines


def _linear_fit(xs: Sequence[float], ys: Sequence[float], axis: str) -> str:
    """Least-squares ``a + b * x``: the fixed part and the cost per unit of the axis."""
    n = len(xs)
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    spread = sum((x - mean_x) ** 2 for x in xs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread
    intercept = mean_y - slope * mean_x
    if "count" in axis:
        return f"{intercept:.0f} ms + {slope:.3f} ms per artifact"
    return f"{intercept:.1f} ms + {slope * 1024 * 1024:.0f} ms per MiB"


def _size(value: float) -> str:
    if value >= 1024 * 1024 and value % (1024 * 1024) == 0:
        return f"{int(value) // (1024 * 1024)} MiB"
    if value >= 1024 and value % 1024 == 0:
        return f"{int(value) // 1024} KiB"
    return f"{value:g}"


def profile_lines(profiles: Json) -> list[str]:
    lines = ["", "### Profiles (cProfile)", "", f"Command: `{profiles['command']}`"]
    for section in profiles["extra"].get("profiles", []):
        lines += [
            "",
            f"<details><summary>{cell(section['title'])}: {section['total_ms']:.0f} ms under the "
            "profiler</summary>",
            "",
            "| function | calls | own | cumulative |",
            "|---|---|---|---|",
        ]
        for row in section["rows"]:
            lines.append(
                f"| `{cell(row['function'])}` | {row['calls']} | {row['tottime_ms']:.1f} ms | "
                f"{row['cumtime_ms']:.1f} ms |"
            )
        lines += ["", "</details>"]
    return lines


def render(results: Sequence[Json], profiles: Json | None) -> str:
    by_name = {result["name"]: result for result in results}
    lines = [BEGIN, "", "## Results", ""]
    if results:
        lines += machine_lines(results)
        lines += summary_lines(results)
    missing = [name for name, _ in ORDER if name not in by_name]
    if missing:
        lines += ["", f"No results yet for: {', '.join(missing)}."]
    for name, title in ORDER:
        result = by_name.get(name)
        if result is None:
            continue
        lines += [
            "",
            f"### {title}",
            "",
            f"`{result['command']}` — {result['date']}, {result['seconds']:.0f} s"
            + _load_text(result.get("load")),
            "",
            HEADER,
        ]
        lines += [measure_row(measure, result["command"]) for measure in result["measures"]]
        lines += extra_tables(name, result)
    if profiles is not None:
        lines += profile_lines(profiles)
    lines += ["", END]
    return "\n".join(lines) + "\n"


def _load_text(load: object) -> str:
    if not isinstance(load, dict):
        return ""
    parts = []
    for when in ("start", "end"):
        entry = load.get(when) or {}
        average = entry.get("loadavg_1m")
        pressure = entry.get("cpu_pressure_avg60")
        if average is not None:
            text = f"load {average:.2f}"
            if pressure is not None:
                text += f", CPU pressure {pressure:.0f}%"
            parts.append(f"{when}: {text}")
    return f" ({'; '.join(parts)})" if parts else ""


def load(directory: Path, names: Iterable[str]) -> list[Json]:
    loaded: list[Json] = []
    for name in names:
        path = directory / f"{name}.json"
        if path.is_file():
            document: Json = json.loads(path.read_text(encoding="utf-8"))
            loaded.append(document)
    return loaded


def splice(existing: str, generated: str) -> str:
    if BEGIN in existing and END in existing:
        head, rest = existing.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        return head + generated.rstrip("\n") + tail
    return existing.rstrip("\n") + "\n\n" + generated if existing else generated


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.report", description=__doc__)
    parser.add_argument("--results-dir", type=Path, default=None)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    directory = results_dir(args.results_dir)
    results = load(directory, [name for name, _ in ORDER])
    profiles_list = load(directory, ["profiles"])
    generated = render(results, profiles_list[0] if profiles_list else None)
    existing = args.output.read_text(encoding="utf-8") if args.output.is_file() else ""
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(splice(existing, generated), encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
