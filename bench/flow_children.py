"""(9) Flows on real Pi: what a flow adds to each child it runs.

Every child, the flow's and the floor's, is real Pi 0.80.10 in RPC mode on the scripted model
(``reply`` policy: one model call answered ``scripted reply``), served by one
``ScriptedModelServer`` in this process. Per round, in rotating order:

* ``single``: ``pi-squad flow --json`` of one researcher (read-only tools), run in this
  process as ``tests/e2e/flow_runs.run_flow`` runs it (the CLI's imports are already loaded:
  what is measured is the flow, not Python's start); floor: one bare ``pi --mode rpc
  --no-session --no-extensions`` child doing the same turn (spawn, ``prompt``, settled, exit);
* ``chain8``: a chain of 8 steps, each handed the previous answer (``{previous}``); floor: 8
  bare children one after another;
* ``parallel8``: 8 tasks at concurrency 8; floor: 8 bare children started at once.

The flow's overhead is the spawn of a child with pi-squad's extension and bridge, its session
directory and prompt file, the handoff preparation and envelope check between steps, and the
trace spans; each flow run's per-child times (``durationMs`` of its results: the child from
spawn to exit as the flow timed it) separate the child's own share from the driver's.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from adapters.pi_runtime import PiRuntime, PiRuntimeUnavailable, locate_runtime
from adapters.scripted_model import ScriptedModelServer, write_models_json
from bench.common import Json, Result, median, ms_since, parse_args, progress, scratch
from bench.pi_client import pi_argv, pi_env
from bench.workspace import inherited_environment
from entrypoints.concerns.setting_reads import runtime_dir
from tests.e2e.flow_runs import WHY, run_flow
from tests.e2e.pi_rpc_client import PiRpcClient

NAME = "flow_children"
POLICY = "reply"
TOOLS = "read,grep,find,ls"
PROMPT = "part 0"


def single_call() -> Json:
    return {"agent": "researcher", "task": PROMPT, "why": WHY, "tools": TOOLS}


def chain_call(steps: int) -> Json:
    chain = [{"agent": "researcher", "task": "step 0 of {task}"}] + [
        {"agent": "researcher", "task": f"step {step}, given {{previous}}"}
        for step in range(1, steps)
    ]
    return {"task": "GOAL", "chain": chain, "why": WHY, "tools": TOOLS}


def parallel_call(tasks: int) -> Json:
    parts = [{"agent": "researcher", "task": f"part {part}"} for part in range(tasks)]
    # A parallel flow must be sized: tier ``capable`` is the session's model.
    return {"tasks": parts, "concurrency": tasks, "tier": "capable", "why": WHY, "tools": TOOLS}


class Bare:
    """Bare ``pi --mode rpc`` children on the same scripted model: the floor."""

    def __init__(self, runtime: PiRuntime, server: ScriptedModelServer, base: Path) -> None:
        agent_dir = base / "bare-agent"
        write_models_json(agent_dir, server.base_url)
        self.argv = pi_argv(runtime, extension=False, model=True)
        self.env = pi_env(runtime, agent_dir, inherited_environment(), {})
        self.cwd = base / "bare-work"
        self.cwd.mkdir()

    def child(self, message: str = PROMPT) -> None:
        """One child: spawned, prompted, settled, exited."""
        pi = PiRpcClient(self.argv, self.env, self.cwd, own_session=True)
        try:
            pi.prompt(message, timeout=120.0)
        finally:
            code = pi.close(timeout=15.0)
        if code != 0:
            raise RuntimeError(f"bare pi exited with {code}:\n{pi.stderr()}")

    def sequential(self, count: int) -> None:
        for position in range(count):
            self.child(f"step {position}")

    def concurrent(self, count: int) -> None:
        failures: list[BaseException] = []

        def one(position: int) -> None:
            try:
                self.child(f"part {position}")
            except BaseException as error:  # reported after the join
                failures.append(error)

        threads = [threading.Thread(target=one, args=(n,)) for n in range(count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if failures:
            raise failures[0]


class Flows:
    """``pi-squad flow --json`` in this process, each run in a fresh squad root."""

    def __init__(self, server: ScriptedModelServer, base: Path) -> None:
        self.server = server
        self.base = base
        self.runs = 0
        self.child_ms: dict[str, list[float]] = {}
        # Per run: the sum of its children's durationMs (for a chain, the time they ran).
        self.children_sum: dict[str, list[float]] = {}

    def run(self, kind: str, call: Json) -> None:
        self.runs += 1
        where = self.base / f"flow-{self.runs}"
        where.mkdir()
        status, document = run_flow(where, call, model_server=self.server)
        if status != 0 or document.get("status") != "completed":
            raise RuntimeError(f"flow {kind} ended {status}: {document}")
        durations = [float(result["durationMs"]) for result in document["results"]]
        self.child_ms.setdefault(kind, []).extend(durations)
        self.children_sum.setdefault(kind, []).append(sum(durations))


def timed(action: Callable[[], object]) -> float:
    begin = time.perf_counter_ns()
    action()
    return ms_since(begin)


def run_rounds(flows: Flows, bare: Bare, rounds: int, size: int) -> dict[str, list[float]]:
    conditions: dict[str, Callable[[], object]] = {
        "single": lambda: flows.run("single", single_call()),
        "single_floor": bare.child,
        f"chain{size}": lambda: flows.run(f"chain{size}", chain_call(size)),
        f"chain{size}_floor": lambda: bare.sequential(size),
        f"parallel{size}": lambda: flows.run(f"parallel{size}", parallel_call(size)),
        f"parallel{size}_floor": lambda: bare.concurrent(size),
    }
    names = list(conditions)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for position in range(rounds):
        # Rotate by pairs, so a flow and its floor stay next to each other.
        shift = 2 * (position % (len(names) // 2))
        order = [*names[shift:], *names[:shift]]
        for name in order:
            samples[name].append(timed(conditions[name]))
        progress(
            f"round {position + 1}/{rounds}: "
            + ", ".join(f"{name} {samples[name][-1]:.0f} ms" for name in names)
        )
    return samples


def add_rows(result: Result, samples: dict[str, list[float]], flows: Flows, size: int) -> None:
    single_floor = samples["single_floor"]
    rows: list[tuple[str, str, str, int]] = [
        ("single", "single flow, one child, end to end", "one bare child", 1),
        (
            f"chain{size}",
            f"chain of {size}, end to end (each step handed the previous answer)",
            f"{size} bare children one after another",
            size,
        ),
        (
            f"parallel{size}",
            f"parallel of {size} at concurrency {size}, end to end",
            f"{size} bare children started at once",
            size,
        ),
    ]
    for key, label, floor_label, children in rows:
        ours = samples[key]
        floor = samples[f"{key}_floor"]
        overhead = [(a - b) / children for a, b in zip(ours, floor, strict=True)]
        result.add(
            f"flow.{key}",
            label,
            ours,
            floor=(floor_label, floor),
            target="≤ 1.15x floor",
            met=median(ours) <= 1.15 * median(floor),
        )
        result.add(
            f"flow.{key}_per_child",
            f"{label}: added per child (minus the same round's floor, over {children})",
            overhead,
        )
    chain = f"chain{size}"
    walls, ran_ms = samples[chain], flows.children_sum[chain]
    result.add(
        f"flow.{chain}_driver_per_step",
        f"chain of {size}: the driver's own time per step (end to end minus its children's "
        f"durationMs, over {size}: handoffs, envelope checks, spans, the call's start and end)",
        [(wall - ran) / size for wall, ran in zip(walls, ran_ms, strict=True)],
    )
    result.add(
        f"flow.{chain}_child_as_timed",
        f"chain of {size}: a step's child from spawn to exit, as the flow timed it",
        flows.child_ms[chain],
        floor=("one bare child (8 in turn, over 8)", [t / size for t in samples[f"{chain}_floor"]]),
    )
    result.add(
        "flow.child_as_timed",
        "a single flow's child from spawn to exit, as the flow timed it (its durationMs)",
        flows.child_ms["single"],
        floor=("one bare child, same rounds", single_floor),
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(NAME, "Flows on real Pi against bare children doing the same turn.", argv)
    result = Result(NAME, quick=args.quick)
    rounds, size = (1, 2) if args.quick else (5, 8)
    try:
        runtime = locate_runtime(None, os.environ, runtime_override=runtime_dir(os.environ))
    except PiRuntimeUnavailable as error:
        result.skip(f"real Pi runtime not installed: {error}")
        return result.finish(args.results_dir)
    with scratch(NAME, keep=args.keep) as base, ScriptedModelServer(POLICY) as server:
        bare = Bare(runtime, server, base)
        flows = Flows(server, base)
        bare.child()  # warms the file cache for Node and Pi
        samples = run_rounds(flows, bare, rounds, size)
    add_rows(result, samples, flows, size)
    result.extra.update({"rounds": rounds, "children": size, "policy": POLICY})
    return result.finish(args.results_dir)


if __name__ == "__main__":
    raise SystemExit(main())
