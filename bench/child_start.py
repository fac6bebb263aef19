"""(5) Child start overhead: ``pi --mode rpc`` start to ready (the first ``get_state`` answer).

Conditions, run in rotating order so drift hits each alike:

* ``none``: ``--no-extensions`` and nothing else (the floor);
* ``spec``: pi-squad's extension with the seven §6 variables of a published squad (the child
  role is active: the shim starts the bridge, awaits ``hello``, installs the reader and guard);
* ``legacy``: the extension with ``PI_SQUAD_CHILD=1`` only (a legacy child: the bridge answers
  ``hello`` with nothing to install and is closed);
* ``stub``: as ``legacy``, but the bridge is a ten-line Python script answering ``hello`` with
  nothing to install: what loading the shim and starting a Python process cost on their own
  (full runs only);
* ``spec-bytecode``: as ``spec``, with Python allowed to cache bytecode (``PYTHONPYCACHEPREFIX``
  in the scratch directory, warmed once, and ``PYTHONDONTWRITEBYTECODE`` removed). Where that
  variable is set and no ``__pycache__`` exists (this sandbox), every bridge start compiles
  every module it imports from source; an installed pi-squad normally runs from cached
  bytecode (full runs only).

``get_state`` is written at once; Pi answers once it has loaded its extensions (it awaits the
shim's async factory, hence ``hello``). The overhead is each extension run minus the ``none``
run of the same round. The bridge's own start (Python start-up and imports until ``hello`` is
answered) is measured alone for the explanation, with a ``-X importtime`` profile.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from adapters.pi_runtime import PiRuntimeUnavailable, locate_runtime
from bench.bridge_client import BRIDGE_ARGV, BridgeProcess
from bench.common import REPO, Json, Result, median, parse_args, progress, results_dir, scratch
from bench.pi_client import pi_argv, pi_env
from bench.published import publish_spec
from bench.workspace import (
    Adapters,
    build_spec,
    child_environment,
    inherited_environment,
)
from tests.e2e.pi_rpc_client import PiRpcClient

NAME = "child_start"
CONDITIONS = ("none", "spec", "legacy", "stub", "spec-bytecode")
STUB_BRIDGE = """
import json, sys
for line in sys.stdin.buffer:
    request = json.loads(line)
    if request.get("method") == "hello":
        nothing = {"tools": [], "guard": False, "messageEnd": False, "bootstrap": False,
                   "lifecycle": False}
        result = {"role": "child-legacy", "protocol": 1, "registrations": nothing}
        sys.stdout.write(json.dumps({"v": 1, "id": request["id"], "ok": True, "result": result}))
        sys.stdout.write("\\n")
        sys.stdout.flush()
"""


def start_to_ready(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    pi = PiRpcClient(argv, env, cwd, own_session=True)
    try:
        arrived, _ = pi.command_response({"type": "get_state"}, timeout=60.0)
        ready = (arrived - pi.started_ns) / 1e6
    finally:
        code = pi.close(timeout=15.0)
    if code != 0:
        raise RuntimeError(f"pi exited with {code}:\n{pi.stderr()}")
    return ready


def with_bytecode_cache(env: dict[str, str], base: Path) -> dict[str, str]:
    """``env`` where Python caches bytecode under ``base/pycache`` (never in the checkout)."""
    cached = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cached["PYTHONPYCACHEPREFIX"] = str(base / "pycache")
    return cached


def bridge_start(env: dict[str, str], base: Path, runs: int) -> list[float]:
    samples = []
    for position in range(runs):
        bridge = BridgeProcess(env, stderr_path=base / f"bridge-start-{position}.log")
        try:
            bridge.call("hello", {"role": "child"})
            samples.append((time.perf_counter_ns() - bridge.started_ns) / 1e6)
        finally:
            bridge.close()
    return samples


def python_start(runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        begin = time.perf_counter_ns()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        samples.append((time.perf_counter_ns() - begin) / 1e6)
    return samples


_IMPORT_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)")


def import_profile(env: dict[str, str], limit: int = 12) -> list[Json]:
    """The slowest top-level imports of ``pi-squad bridge`` (cumulative microseconds)."""
    completed = subprocess.run(
        [sys.executable, "-X", "importtime", *BRIDGE_ARGV[1:], "--role", "child"],
        input=b"",
        capture_output=True,
        env=env,
        cwd=REPO,
        check=False,
    )
    rows: list[Json] = []
    for line in completed.stderr.decode(errors="replace").splitlines():
        match = _IMPORT_LINE.match(line)
        if match is None:
            continue
        self_us, cumulative_us, indent, module = match.groups()
        rows.append(
            {
                "module": module,
                "depth": (len(indent) - 1) // 2,
                "self_ms": int(self_us) / 1000,
                "cumulative_ms": int(cumulative_us) / 1000,
            }
        )
    top = [row for row in rows if row["depth"] <= 1]
    top.sort(key=lambda row: row["cumulative_ms"], reverse=True)
    total = sum(row["cumulative_ms"] for row in rows if row["depth"] == 0)
    return [{"module": "(all imports)", "cumulative_ms": total}, *top[:limit]]


def bridge_alone(
    result: Result, bridge_env: dict[str, str], base: Path, *, rounds: int, quick: bool
) -> None:
    """The bridge's own start, as the source checkout runs it and from cached bytecode."""
    progress(f"bridge alone: {rounds} starts")
    bridge = bridge_start(bridge_env, base, rounds)
    bare = python_start(rounds)
    result.add(
        "bridge.start_to_hello",
        "pi-squad bridge alone: process start to hello answered (spec child)",
        bridge,
        floor=("python -c pass", bare),
    )
    result.extra["bridge_import_profile"] = import_profile(bridge_env)
    result.extra["bytecode_written"] = not os.environ.get("PYTHONDONTWRITEBYTECODE")
    # Which condition is an installed pi-squad's: Python caches the bytecode of an installed
    # package at its first import; only a checkout run with PYTHONDONTWRITEBYTECODE and no
    # __pycache__ (this sandbox) compiles every module at every bridge start.
    result.extra["installed_condition"] = "spec-bytecode"
    if not quick:
        cached_env = with_bytecode_cache(bridge_env, base)
        bridge_start(cached_env, base, 1)  # fills the bytecode cache
        result.add(
            "bridge.start_to_hello_bytecode",
            "pi-squad bridge alone, from cached bytecode: process start to hello answered",
            bridge_start(cached_env, base, rounds),
            floor=("python -c pass", bare),
        )


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(NAME, "pi --mode rpc start to ready, with and without the child role.", argv)
    result = Result(NAME, quick=args.quick)
    rounds = 1 if args.quick else 10
    adapters = Adapters.real()
    with scratch(NAME, keep=args.keep) as base:
        data = build_spec(32 * 1024, tasks=2)
        published = publish_spec(adapters, base / "root", base / "project", data)
        spec_env = child_environment(published, "t000")
        inherited = inherited_environment()
        bridge_env = {**inherited, **spec_env}
        bridge_alone(result, bridge_env, base, rounds=rounds, quick=args.quick)
        try:
            runtime = locate_runtime(None, os.environ)
        except PiRuntimeUnavailable as error:
            result.skip(f"real Pi runtime not installed: {error}")
            result.write(results_dir(args.results_dir))
            return 0
        agent_dir = base / "agent"
        agent_dir.mkdir()
        work = base / "work"
        work.mkdir()
        setups = {
            "none": (pi_argv(runtime, extension=False), pi_env(runtime, agent_dir, inherited, {})),
            "spec": (
                pi_argv(runtime, extension=True),
                pi_env(runtime, agent_dir, inherited, spec_env),
            ),
            "legacy": (
                pi_argv(runtime, extension=True),
                pi_env(runtime, agent_dir, inherited, {"PI_SQUAD_CHILD": "1"}),
            ),
        }
        stub = base / "stub_bridge.py"
        stub.write_text(STUB_BRIDGE)
        stub_env = pi_env(runtime, agent_dir, inherited, {"PI_SQUAD_CHILD": "1"})
        stub_env["PI_SQUAD_BRIDGE"] = json.dumps([sys.executable, str(stub)])
        setups["stub"] = (pi_argv(runtime, extension=True), stub_env)
        setups["spec-bytecode"] = (
            pi_argv(runtime, extension=True),
            with_bytecode_cache(pi_env(runtime, agent_dir, inherited, spec_env), base),
        )
        conditions = CONDITIONS[:3] if args.quick else CONDITIONS
        samples: dict[str, list[float]] = {condition: [] for condition in conditions}
        overhead: dict[str, list[float]] = {c: [] for c in conditions if c != "none"}
        if not args.quick:
            start_to_ready(*setups["none"], work)  # warms the file cache for Node and Pi
        for position in range(rounds):
            shift = position % len(conditions)
            order = conditions[shift:] + conditions[:shift]
            this_round = {
                condition: start_to_ready(*setups[condition], work) for condition in order
            }
            for condition, value in this_round.items():
                samples[condition].append(value)
            for condition, values in overhead.items():
                values.append(this_round[condition] - this_round["none"])
            progress(
                f"round {position + 1}/{rounds}: "
                + ", ".join(f"{c} {v:.0f} ms" for c, v in this_round.items())
            )
    result.add(
        "pi.ready_without_extension",
        "pi --mode rpc start to ready, no extension",
        samples["none"],
    )
    labels = {
        "spec": "extension loaded, child role active (spec child)",
        "legacy": "extension loaded as a legacy child",
        "stub": "extension loaded with a stub bridge (shim + bare Python, no pi-squad import)",
        "spec-bytecode": "spec child, bridge from cached bytecode",
    }
    for condition, extra_ms in overhead.items():
        label = labels[condition]
        result.add(
            f"pi.ready_{condition}",
            f"pi --mode rpc start to ready, {label}",
            samples[condition],
            floor=("same round without extension", samples["none"]),
        )
        product = condition != "stub"
        result.add(
            f"pi.overhead_{condition}",
            f"child start overhead, {label} (minus the same round without extension)",
            extra_ms,
            target="median < 150 ms" if product else None,
            met=median(extra_ms) < 150.0 if product else None,
        )
    result.write(results_dir(args.results_dir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
