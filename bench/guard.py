"""(3) Guard overhead per tool call after attestation.

Bridge: a spec child whose attestation is complete (written beforehand through the child role)
answers 1,000 ``tool_call`` requests for ``bash``; each is timed from writing the line to
decoding the answer, so the IPC is included. Floor, interleaved call by call: an unknown-method
round trip through the same pipe (the protocol has no echo method; an unknown method is answered
by the bridge's reader thread, so this floor leaves out the worker-pool hop that ``tool_call``
takes), plus ``hello`` (answered on the worker pool, like ``tool_call``) for context. The first
``tool_call`` (the full verification that fills the identity cache) is reported apart.

Real Pi: Pi 0.80.10 with the scripted model issuing 200 trivial ``bash`` calls (``true``), one
per assistant message, with pi-squad's extension loaded as that attested child vs without any
extension; runs alternate. Per call: the interval between consecutive ``tool_execution_start``
records (model round trip + guard + bash + tool-result ``message_end`` hook), and the window
``tool_execution_start`` -> ``tool_execution_end`` (guard + bash). The added cost per call is
the difference of the two conditions' medians (and of their p99s); the first call of each run
is left out. A batched variant issues 10 calls per message.
"""

from __future__ import annotations

import functools
import itertools
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from adapters.pi_runtime import PiRuntime, PiRuntimeUnavailable, locate_runtime
from adapters.scripted_model import ScriptedModelServer, write_models_json
from bench.common import (
    Json,
    Result,
    median,
    ms_since,
    parse_args,
    percentile,
    progress,
    scratch,
)
from bench.full_read import start_bridge
from bench.pi_client import (
    BENCH_POLICIES,
    BENCH_POLICY,
    CALLS_MARKER,
    PER_MESSAGE_MARKER,
    pi_argv,
    pi_env,
)
from bench.published import publish_spec
from bench.workspace import (
    KIB,
    MIB,
    Adapters,
    attest,
    build_spec,
    child_environment,
    inherited_environment,
)
from entrypoints.concerns.setting_reads import runtime_dir
from tests.e2e.pi_rpc_client import PiRpcClient

NAME = "guard"


def bridge_guard(published: Any, task_id: str, base: Path, calls: int) -> Json:
    bridge, _ = start_bridge(published, task_id, base)
    guard: list[float] = []
    echo: list[float] = []
    hello: list[float] = []
    params = {"toolCallId": "g", "toolName": "bash", "input": {"command": "true"}}
    try:
        begin = time.perf_counter_ns()
        first = bridge.call("tool_call", params)
        first_ms = ms_since(begin)
        if first.get("block"):
            raise RuntimeError(f"the guard blocks after attestation: {first}")
        for position in range(calls):
            begin = time.perf_counter_ns()
            decision = bridge.call("tool_call", {**params, "toolCallId": f"g{position}"})
            guard.append(ms_since(begin))
            if decision.get("block"):
                raise RuntimeError(f"the guard blocked call {position}: {decision}")
            begin = time.perf_counter_ns()
            bridge.request("bench_echo", {})
            echo.append(ms_since(begin))
            begin = time.perf_counter_ns()
            bridge.call("hello", {"role": "child"})
            hello.append(ms_since(begin))
    finally:
        bridge.close()
    return {"guard": guard, "echo": echo, "hello": hello, "first": first_ms}


def _prompt_file(base: Path, name: str, calls: int, per_message: int) -> Path:
    path = base / f"{name}.md"
    path.write_text(
        "\n".join(
            [
                "You are a benchmark agent.",
                f"scripted-policy: {BENCH_POLICY}",
                f"{CALLS_MARKER}: {calls}",
                f"{PER_MESSAGE_MARKER}: {per_message}",
                "",
            ]
        )
    )
    return path


def pi_run(
    runtime: PiRuntime,
    server: ScriptedModelServer,
    base: Path,
    *,
    extension: bool,
    environment: dict[str, str],
    calls: int,
    per_message: int,
) -> Json:
    agent_dir = base / "agent"
    write_models_json(agent_dir, server.base_url)
    prompt = _prompt_file(base, f"prompt-{calls}-{per_message}", calls, per_message)
    work = base / "work"
    work.mkdir(exist_ok=True)
    env = pi_env(runtime, agent_dir, inherited_environment(), environment if extension else {})
    argv = pi_argv(runtime, extension=extension, model=True, append_prompt=prompt)
    pi = PiRpcClient(argv, env, work, own_session=True)
    try:
        pi.command({"type": "get_state"}, timeout=60.0)
        begin = time.perf_counter_ns()
        records = pi.prompt_stamped("Run the benchmark.", timeout=600.0)
        total = ms_since(begin)
    finally:
        code = pi.close(timeout=15.0)
    if code != 0:
        raise RuntimeError(f"pi exited with {code}:\n{pi.stderr()}")
    errors = [r for r in records if r[1].get("type") == "extension_error"]
    if errors:
        raise RuntimeError(f"extension errors: {errors[:3]}")
    starts: dict[str, int] = {}
    ends: dict[str, int] = {}
    order: list[str] = []
    failed = 0
    for arrived, record in records:
        kind = record.get("type")
        if kind == "tool_execution_start" and record.get("toolName") == "bash":
            starts[record["toolCallId"]] = arrived
            order.append(record["toolCallId"])
        elif kind == "tool_execution_end" and record.get("toolName") == "bash":
            ends[record["toolCallId"]] = arrived
            failed += bool(record.get("isError"))
    if len(order) != calls or failed:
        raise RuntimeError(f"{len(order)} bash calls ran ({failed} failed), {calls} expected")
    turn = [(starts[b] - starts[a]) / 1e6 for a, b in itertools.pairwise(order[1:])]
    window = [(ends[c] - starts[c]) / 1e6 for c in order[1:]]
    return {"turn": turn, "window": window, "total": total, "per_call": total / calls}


def real_pi(
    runtime: PiRuntime,
    published: Any,
    task_id: str,
    base: Path,
    *,
    runs: int,
    calls: int,
    batched: bool,
) -> dict[str, dict[str, list[float]]]:
    environment = child_environment(published, task_id)
    collected: dict[str, dict[str, list[float]]] = {
        condition: {"turn": [], "window": [], "per_call": [], "batched_per_call": []}
        for condition in ("without", "with")
    }
    with ScriptedModelServer(BENCH_POLICY, policies=BENCH_POLICIES) as server:
        for run in range(runs):
            for condition in ("without", "with") if run % 2 == 0 else ("with", "without"):
                run_pi = functools.partial(
                    pi_run,
                    runtime,
                    server,
                    base,
                    extension=condition == "with",
                    environment=environment,
                    calls=calls,
                )
                one = run_pi(per_message=1)
                target = collected[condition]
                target["turn"] += one["turn"]
                target["window"] += one["window"]
                target["per_call"].append(one["per_call"])
                if batched:
                    target["batched_per_call"].append(run_pi(per_message=10)["per_call"])
                progress(
                    f"pi run {run + 1}/{runs} {condition} extension: {one['per_call']:.2f} ms/call"
                )
    return collected


def add_with_extension(
    result: Result,
    pi: Json,
    key: str,
    measure_id: str,
    label: str,
    *,
    p99: bool = False,
    more_notes: str = "",
) -> float:
    """The real-Pi measure ``key`` with the extension loaded, its floor the same without any
    extension; the median it adds per call."""
    with_, without = pi["with"][key], pi["without"][key]
    added = median(with_) - median(without)
    result.add(
        measure_id,
        label,
        with_,
        floor=("same without any extension", without),
        p99=p99,
        notes=f"added per call: median {added:+.2f} ms{more_notes}",
    )
    return added


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(NAME, "Guard overhead per tool call after attestation.", argv)
    result = Result(NAME, quick=args.quick)
    size = 64 * KIB if args.quick else MIB
    guard_calls = 100 if args.quick else 1000
    pi_runs = 1 if args.quick else 3
    pi_calls = 6 if args.quick else 200
    adapters = Adapters.real()
    with scratch(NAME, keep=args.keep) as base:
        data = build_spec(size, tasks=4)
        published = publish_spec(adapters, base / "root", base / "project", data)
        attest(adapters, published, "t000")
        progress(f"bridge: {guard_calls} guard decisions")
        bridge = bridge_guard(published, "t000", base, guard_calls)
        result.add(
            "bridge.guard_decision",
            "guard decision after attestation via bridge (tool_call round trip, IPC included)",
            bridge["guard"],
            floor=("unknown-method round trip, same pipe", bridge["echo"]),
            p99=True,
            upstream="1.64 ms, p99 8.8 ms (no IPC)",
            target="median < 0.3 ms, p99 < 1 ms",
            met=median(bridge["guard"]) < 0.3 and percentile(bridge["guard"], 99) < 1.0,
        )
        result.add(
            "bridge.hello_round_trip",
            "hello round trip via bridge (worker-pool hop, no file access)",
            bridge["hello"],
            p99=True,
            notes="context: the pool round trip tool_call also takes",
        )
        result.add(
            "bridge.first_guard_decision",
            "first guard decision after start (full verification fills the identity cache)",
            [bridge["first"]],
        )
        try:
            runtime = locate_runtime(None, os.environ, runtime_override=runtime_dir(os.environ))
        except PiRuntimeUnavailable as error:
            result.extra["real_pi"] = f"skipped: {error}"
            runtime = None
        if runtime is not None:
            progress(f"real Pi: {pi_runs} runs x {pi_calls} calls per condition")
            pi = real_pi(
                runtime,
                published,
                "t000",
                base / "pi",
                runs=pi_runs,
                calls=pi_calls,
                batched=not args.quick,
            )
            turn_p99 = percentile(pi["with"]["turn"], 99) - percentile(pi["without"]["turn"], 99)
            turn = add_with_extension(
                result,
                pi,
                "turn",
                "pi.turn_with_extension",
                f"real Pi: time per tool call, one per message, extension loaded (attested "
                f"child), {pi_calls} calls x {pi_runs} runs",
                p99=True,
                more_notes=f", p99 {turn_p99:+.2f} ms",
            )
            window = add_with_extension(
                result,
                pi,
                "window",
                "pi.tool_window_with_extension",
                "real Pi: tool_execution_start -> end (guard + bash), extension loaded",
                p99=True,
            )
            added: dict[str, float] = {"median": turn, "p99": turn_p99, "window_median": window}
            if pi["with"]["batched_per_call"]:
                added["batched_median"] = add_with_extension(
                    result,
                    pi,
                    "batched_per_call",
                    "pi.batched_per_call_with_extension",
                    "real Pi: wall time per call, 10 calls per message, extension loaded",
                )
            result.extra["pi_added_ms_per_call"] = added
    result.extra.update({"spec_bytes": size, "guard_calls": guard_calls, "pi_calls": pi_calls})
    return result.finish(args.results_dir)


if __name__ == "__main__":
    raise SystemExit(main())
