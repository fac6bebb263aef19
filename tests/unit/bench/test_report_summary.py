"""The generated summary of ``docs/benchmarks.md`` lists every measure that has a target, with
its floor, ratio and verdict, and says how many targets the run met."""

from __future__ import annotations

from bench.common import Json
from bench.report import render


def result(name: str, measures: list[Json]) -> Json:
    return {
        "schema": 1,
        "name": name,
        "command": f"uv run python -m bench.{name}",
        "quick": False,
        "date": "2026-12-03T00:00:00+00:00",
        "seconds": 1.0,
        "machine": {
            "nproc": 2,
            "memory_mib": 1024,
            "cpu_model": "test",
            "platform": "test",
            "python": "3.11",
            "scratch_fs": "ext4",
            "node": None,
            "pi": None,
        },
        "measures": measures,
        "extra": {},
    }


def measure(identifier: str, median: float, **fields: object) -> Json:
    return {
        "id": identifier,
        "label": identifier,
        "unit": "ms",
        "median": median,
        "min": median,
        "max": median,
        "n": 3,
        **fields,
    }


FLOOR: Json = {"label": "one hash", "unit": "ms", "median": 0.5, "min": 0.5, "max": 0.5, "n": 3}


def summary_of(text: str) -> list[str]:
    section = text.split("### Summary against the targets", 1)[1].split("\n### ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]


def test_every_targeted_measure_is_a_summary_row_with_floor_ratio_and_verdict() -> None:
    results = [
        result(
            "full_read",
            [
                measure("read", 0.8, floor=FLOOR, ratio=1.6, target="median < 1.0 ms", met=True),
                measure("untargeted", 5.0),
            ],
        ),
        result("scheduler", [measure("per_task", 12.0, target="< 10 ms per task", met=False)]),
    ]

    text = render(results, None)
    rows = summary_of(text)

    assert "1 of 2 targets met in this run." in text
    assert rows[1:] == [
        "| 2 | read | 0.800 ms (0.800 ms – 0.800 ms, 3) | 0.500 ms (one hash) | 1.60x "
        "| median < 1.0 ms | met |",
        "| 6 | per_task | 12.0 ms (12.0 ms – 12.0 ms, 3) | — | — | < 10 ms per task | **missed** |",
    ]


def test_a_run_without_targets_has_no_summary() -> None:
    text = render([result("guard", [measure("hello", 0.1)])], None)

    assert "Summary against the targets" not in text
