"""(issue 16) What a flow trace costs: a flow with and without ``traceFile``, and the import of
the OpenTelemetry SDK that only a tracing call pays.

Flow: a 16-node graph in 4 waves of 4 (each node depending on every node of the wave before),
``concurrency`` 4, over ``tests.fakes.child_runtime.FakeChildRuntime`` children that answer and
settle inside ``spawn``, so the measure is the engine's own work: admission, dispatch, the 48
handoffs (each dependency's envelope prepared once, delivered to each dependent), and, when
traced, 69 spans (1 root, 4 stages, 16 children, 48 ``handoff.accepted`` events) exported
through the OpenTelemetry SDK as JSON lines to a file on the scratch file system, with the one
``fsync`` at the end (the count is checked against the rows the warm-up run wrote). Conditions
alternate every round (``untraced``, the floor, then ``traced``), so drift hits both alike.

Import: a fresh ``python -c`` importing the flow engine and ``adapters.tracing.otel`` against one
importing only the flow engine (``application.flows.run_flow``, the floor), alternating. The
container imports the adapter lazily (``entrypoints.concerns.adapters.LazyOtelTraceSinks``), so
the difference is what the first traced call of a process pays and an untraced one never does.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from adapters.tracing.otel import OtelTraceSinks
from application.flows.run_flow import FlowContext, FlowRunner
from application.squads.scheduler import NO_ISOLATION
from bench.common import REPO, Result, median, parse_args, progress, results_dir, scratch
from bench.workspace import Adapters
from tests.fakes.child_runtime import FakeChild, FakeChildRuntime
from tests.fakes.flows import FakeAgentDirectory, FakePresetDirectory

NAME = "trace_export"
WAVES, WIDTH = 4, 4
# Root, stages, children, and one handoff event per dependency edge.
SPANS = 1 + WAVES + WAVES * WIDTH + (WAVES - 1) * WIDTH * WIDTH


def _answer(child: FakeChild) -> None:
    child.say("done", tokens=10, cost=0.001)
    child.settle()


def _call(trace: str | None) -> dict[str, Any]:
    nodes: list[dict[str, Any]] = []
    for wave in range(WAVES):
        for slot in range(WIDTH):
            node: dict[str, Any] = {"id": f"w{wave}n{slot}", "agent": "researcher", "task": "t"}
            if wave:
                node["dependsOn"] = [f"w{wave - 1}n{other}" for other in range(WIDTH)]
            nodes.append(node)
    call: dict[str, Any] = {"task": "g", "graph": {"nodes": nodes}, "why": "bench"}
    return {**call, "traceFile": trace} if trace is not None else call


def _runner(adapters: Adapters, root: Path) -> FlowRunner:
    runtime = FakeChildRuntime(on_spawn=_answer)
    return FlowRunner(
        runtime=runtime,
        agents=FakeAgentDirectory(),
        presets=FakePresetDirectory(),
        fs=adapters.fs,
        clock=adapters.clock,
        ids=adapters.ids,
        squad_root=str(root),
        isolation=NO_ISOLATION,
        trace_sinks=OtelTraceSinks(str(root)),
    )


def _flow_ms(runner: FlowRunner, cwd: Path, trace: str | None) -> float:
    started = time.perf_counter()
    report = runner.run(_call(trace), FlowContext(cwd=str(cwd)))
    elapsed = (time.perf_counter() - started) * 1000
    assert report.status == "completed"
    if trace is not None:
        assert report.document()["trace"]["spans"]["health"] == "recorded"
    return elapsed


def _import_ms(module: str) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", f"import {module}"], cwd=REPO, check=True, capture_output=True
    )
    return (time.perf_counter() - started) * 1000


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(NAME, "What a flow trace costs: traced vs untraced flow, SDK import.", argv)
    result = Result(NAME, quick=args.quick)
    rounds, import_rounds = (20, 5) if args.quick else (200, 15)
    adapters = Adapters.real()
    untraced: list[float] = []
    traced: list[float] = []
    with scratch(NAME, keep=args.keep) as base:
        cwd = base / "project"
        cwd.mkdir()
        runner = _runner(adapters, base / "root")
        _flow_ms(runner, cwd, None)  # warm: first imports and caches out of the measure
        _flow_ms(runner, cwd, "warm.jsonl")
        written = (cwd / "warm.jsonl").read_bytes().splitlines()
        assert len(written) == SPANS, f"the flow wrote {len(written)} spans, not {SPANS}"
        for index in range(rounds):
            untraced.append(_flow_ms(runner, cwd, None))
            traced.append(_flow_ms(runner, cwd, f"trace-{index}.jsonl"))
        row_bytes = [len(line) for line in (cwd / "trace-0.jsonl").read_bytes().splitlines()]
    progress(f"flow: untraced {median(untraced):.2f} ms, traced {median(traced):.2f} ms")
    floor_imports: list[float] = []
    sdk_imports: list[float] = []
    for _ in range(import_rounds):
        floor_imports.append(_import_ms("application.flows.run_flow"))
        sdk_imports.append(_import_ms("application.flows.run_flow, adapters.tracing.otel"))
    progress(f"import: engine {median(floor_imports):.0f} ms, +SDK {median(sdk_imports):.0f} ms")
    result.add(
        "trace.flow_traced",
        f"a 16-node graph flow over instant fake children, traced ({SPANS} spans to a JSONL file)",
        traced,
        floor=("the same flow untraced", untraced),
        notes="per span: (traced - untraced) / spans, in extra.per_span_ms",
    )
    result.add(
        "trace.sdk_import",
        "a fresh Python importing the flow engine and the OpenTelemetry trace adapter",
        sdk_imports,
        floor=("a fresh Python importing the flow engine only", floor_imports),
    )
    result.extra.update(
        {
            "rounds": rounds,
            "spans_per_flow": SPANS,
            "handoff_events_per_flow": (WAVES - 1) * WIDTH * WIDTH,
            "per_span_ms": round((median(traced) - median(untraced)) / SPANS, 4),
            "row_bytes_median": median([float(b) for b in row_bytes]),
            "row_bytes_max": max(row_bytes),
            "import_rounds": import_rounds,
        }
    )
    result.write(results_dir(args.results_dir))
    progress(json.dumps({m["id"]: round(m.get("ratio", 0), 2) for m in result.measures}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
