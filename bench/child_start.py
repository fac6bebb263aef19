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
* ``spec-bytecode``: as ``spec``, with Python allowed to cache bytecode itself
  (``PYTHONPYCACHEPREFIX`` in the scratch directory, warmed once, ``PYTHONDONTWRITEBYTECODE``
  removed): an install that compiles nothing, from its second child on (full runs only);
* ``spec-cold``: as ``spec``, with no bytecode for pi-squad and its dependencies at all (a
  prefix holding the standard library's alone, ``PYTHONDONTWRITEBYTECODE=1``): every bridge
  start compiles every pi-squad and dependency module it imports, as in a checkout synced
  without ``make setup``'s compile step under this sandbox's ``PYTHONDONTWRITEBYTECODE``
  (context, full runs only).

``spec`` and ``legacy`` run pi-squad as a user's install does: the shim starts the
``pi-squad`` console script installed beside this interpreter (``.venv/bin/pi-squad`` of a
checkout, what its ``installedBridge`` finds), with the bytecode the install left.
``make setup`` compiles it (``uv sync --compile-bytecode`` for the dependencies, ``compileall``
for pi-squad's own packages, which an editable install keeps outside site-packages); whether
every module had fresh bytecode is recorded (``installed_bytecode``) and said in the rows.

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

from adapters.pi_runtime import PiRuntime, PiRuntimeUnavailable, locate_runtime
from bench.bridge_client import BridgeProcess
from bench.bytecode import (
    cold_environment,
    installed_bridge_argv,
    installed_bytecode,
    installed_note,
)
from bench.common import REPO, Json, Result, median, parse_args, progress, scratch
from bench.pi_client import pi_argv, pi_env
from bench.published import publish_spec
from bench.workspace import (
    Adapters,
    build_spec,
    child_environment,
    inherited_environment,
)
from entrypoints.concerns.setting_reads import runtime_dir
from tests.e2e.pi_rpc_client import PiRpcClient

NAME = "child_start"
CONDITIONS = ("none", "spec", "legacy", "stub", "spec-bytecode", "spec-cold")
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


def bridge_start(
    env: dict[str, str], base: Path, runs: int, argv: Sequence[str] | None = None
) -> list[float]:
    samples = []
    for position in range(runs):
        bridge = BridgeProcess(
            env,
            stderr_path=base / f"bridge-start-{position}.log",
            argv=installed_bridge_argv() if argv is None else argv,
        )
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
    """The slowest top-level imports of ``pi-squad bridge`` as installed (cumulative ms)."""
    completed = subprocess.run(
        [*installed_bridge_argv(), "--role", "child"],
        input=b"",
        capture_output=True,
        env={**env, "PYTHONPROFILEIMPORTTIME": "1"},
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
    result: Result, envs: dict[str, dict[str, str]], base: Path, *, rounds: int, note: str
) -> None:
    """The bridge's own start, as installed, from Python's own cache and cold, interleaved."""
    progress(f"bridge alone: {rounds} starts per condition")
    samples: dict[str, list[float]] = {name: [] for name in envs}
    bare: list[float] = []
    for _ in range(rounds):
        for name, env in envs.items():
            samples[name] += bridge_start(env, base, 1)
        bare += python_start(1)
    floor = ("python -c pass", bare)
    result.add(
        "bridge.start_to_hello",
        "pi-squad bridge alone, as installed (console script, bytecode compiled by the "
        f"install): process start to hello answered (spec child){note}",
        samples["spec"],
        floor=floor,
    )
    labels = {
        "spec-bytecode": "pi-squad bridge alone, from Python's own bytecode cache (written at "
        "its first start): process start to hello answered",
        "spec-cold": "pi-squad bridge alone, no bytecode for pi-squad and its dependencies "
        "(compiled at every start): process start to hello answered",
    }
    for name, label in labels.items():
        if name in samples:
            key = "bridge.start_to_hello_" + name.removeprefix("spec-")
            result.add(key, label, samples[name], floor=floor)
    result.extra["bridge_import_profile"] = import_profile(envs["spec"])
    result.extra["bytecode_written"] = not os.environ.get("PYTHONDONTWRITEBYTECODE")
    # Which condition is an installed pi-squad's: the headline rows (``spec``, ``legacy``) run
    # the console script with the bytecode the install compiled (``installed_bytecode`` says
    # whether it was all there).
    result.extra["installed_condition"] = "spec"


Setup = tuple[list[str], dict[str, str]]


def bridge_environments(
    inherited: dict[str, str], spec_env: dict[str, str], base: Path, *, quick: bool
) -> dict[str, dict[str, str]]:
    """The bridge's environment per condition: as installed; Python's own cache; cold."""
    envs = {"spec": {**inherited, **spec_env}}
    if not quick:
        cached = with_bytecode_cache(envs["spec"], base)
        bridge_start(cached, base, 1)  # fills Python's own cache (its first start)
        envs["spec-bytecode"] = cached
        envs["spec-cold"] = cold_environment(
            envs["spec"], base / "cold-pycache", lambda env: bridge_start(env, base, 1)
        )
    return envs


def pi_setups(
    runtime: PiRuntime,
    base: Path,
    inherited: dict[str, str],
    spec_env: dict[str, str],
    bridge_envs: dict[str, dict[str, str]],
) -> dict[str, Setup]:
    agent_dir = base / "agent"
    agent_dir.mkdir()
    bridge = json.dumps(installed_bridge_argv())

    def installed_env(extra: dict[str, str]) -> dict[str, str]:
        """What a user's Pi gives the shim: the installed console script as the bridge."""
        return {**pi_env(runtime, agent_dir, inherited, extra), "PI_SQUAD_BRIDGE": bridge}

    with_extension = pi_argv(runtime, extension=True)
    setups = {
        "none": (pi_argv(runtime, extension=False), pi_env(runtime, agent_dir, inherited, {})),
        "spec": (with_extension, installed_env(spec_env)),
        "legacy": (with_extension, installed_env({"PI_SQUAD_CHILD": "1"})),
    }
    stub = base / "stub_bridge.py"
    stub.write_text(STUB_BRIDGE)
    stub_env = pi_env(runtime, agent_dir, inherited, {"PI_SQUAD_CHILD": "1"})
    stub_env["PI_SQUAD_BRIDGE"] = json.dumps([sys.executable, str(stub)])
    setups["stub"] = (with_extension, stub_env)
    for condition in ("spec-bytecode", "spec-cold"):
        if condition in bridge_envs:
            # The bytecode variables of that condition's bridge-alone runs.
            env = installed_env(spec_env)
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            for name in ("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE"):
                if name in bridge_envs[condition]:
                    env[name] = bridge_envs[condition][name]
            setups[condition] = (with_extension, env)
    return setups


def run_rounds(
    setups: dict[str, Setup], conditions: Sequence[str], rounds: int, work: Path
) -> dict[str, list[float]]:
    """Start to ready per condition, in rotating order within each round."""
    samples: dict[str, list[float]] = {condition: [] for condition in conditions}
    for position in range(rounds):
        shift = position % len(conditions)
        order = [*conditions[shift:], *conditions[:shift]]
        this_round = {condition: start_to_ready(*setups[condition], work) for condition in order}
        for condition, value in this_round.items():
            samples[condition].append(value)
        progress(
            f"round {position + 1}/{rounds}: "
            + ", ".join(f"{c} {v:.0f} ms" for c, v in this_round.items())
        )
    return samples


def add_pi_rows(result: Result, samples: dict[str, list[float]], note: str) -> None:
    result.add(
        "pi.ready_without_extension",
        "pi --mode rpc start to ready, no extension",
        samples["none"],
    )
    labels = {
        "spec": "extension loaded, child role active (spec child), pi-squad as installed "
        f"(console script, bytecode compiled by the install){note}",
        "legacy": f"extension loaded as a legacy child, pi-squad as installed{note}",
        "stub": "extension loaded with a stub bridge (shim + bare Python, no pi-squad import)",
        "spec-bytecode": "spec child, bridge from Python's own bytecode cache (written at its "
        "first start; an install that compiles nothing)",
        "spec-cold": "spec child, no bytecode for pi-squad and its dependencies (compiled at "
        "every start: a checkout without make setup's compile step, PYTHONDONTWRITEBYTECODE)",
    }
    for condition, values in samples.items():
        if condition == "none":
            continue
        label = labels[condition]
        extra_ms = [value - none for value, none in zip(values, samples["none"], strict=True)]
        result.add(
            f"pi.ready_{condition}",
            f"pi --mode rpc start to ready, {label}",
            values,
            floor=("same round without extension", samples["none"]),
        )
        # The cold row is context: an install leaves bytecode (see the module's docstring).
        product = condition not in ("stub", "spec-cold")
        result.add(
            f"pi.overhead_{condition}",
            f"child start overhead, {label} (minus the same round without extension)",
            extra_ms,
            target="median < 150 ms" if product else None,
            met=median(extra_ms) < 150.0 if product else None,
        )


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(NAME, "pi --mode rpc start to ready, with and without the child role.", argv)
    result = Result(NAME, quick=args.quick)
    rounds = 1 if args.quick else 10
    installed = installed_bytecode()
    result.extra["installed_bytecode"] = installed
    note = installed_note(installed)
    with scratch(NAME, keep=args.keep) as base:
        data = build_spec(32 * 1024, tasks=2)
        published = publish_spec(Adapters.real(), base / "root", base / "project", data)
        spec_env = child_environment(published, "t000")
        inherited = inherited_environment()
        bridge_envs = bridge_environments(inherited, spec_env, base, quick=args.quick)
        bridge_alone(result, bridge_envs, base, rounds=rounds, note=note)
        try:
            runtime = locate_runtime(None, os.environ, runtime_override=runtime_dir(os.environ))
        except PiRuntimeUnavailable as error:
            result.skip(f"real Pi runtime not installed: {error}")
            return result.finish(args.results_dir)
        setups = pi_setups(runtime, base, inherited, spec_env, bridge_envs)
        work = base / "work"
        work.mkdir()
        conditions = CONDITIONS[:3] if args.quick else CONDITIONS
        if not args.quick:
            start_to_ready(*setups["none"], work)  # warms the file cache for Node and Pi
        samples = run_rounds(setups, conditions, rounds, work)
    add_pi_rows(result, samples, note)
    return result.finish(args.results_dir)


if __name__ == "__main__":
    raise SystemExit(main())
