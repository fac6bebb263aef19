"""(11) The driver while its children wait: CPU and RSS, sampled from ``/proc``.

* Flows: ``pi-squad flow --json`` (the installed console script, its own process) runs a
  parallel of 8 at concurrency 8 on real Pi 0.80.10. The scripted model, served from this
  process, holds every request open (policy ``bench-hold``: the answer waits for the bench's
  release), so all 8 children sit waiting on their model. Once 8 requests have arrived, the
  driver's ``utime + stime`` (``/proc/<pid>/stat``) is read at both ends of a window of wall
  time, and its ``VmRSS`` and ``VmHWM`` (``/proc/<pid>/status``) at its end; then the model
  answers and the flow completes.
* Delegation: a host over the real store holds 200 sources and 32 running jobs (4 batches of
  8 on the fake worker runtime, which never reports), and a ``collect`` waits on one batch
  for the window (it re-reads the store every 0.25 s: another process may publish). Measured
  in this process with ``time.process_time`` over the window, and this process's ``VmRSS``
  against its RSS before the session was built.

Target for both: under 1% of one core (as the squad driver's, ``bench.driver_idle``), no floor:
a waiting driver's ideal is zero. RSS is given without a target.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from adapters.pi_runtime import PiRuntimeUnavailable, locate_runtime
from adapters.scripted_model import ScriptedModelServer, write_models_json
from adapters.scripted_model.conversation import Conversation
from adapters.scripted_model.models_json import MODEL_ID, PROVIDER
from adapters.scripted_model.replies import PolicyState, Reply
from bench.common import Json, Result, median, parse_args, progress, scratch
from bench.delegation_host import Session, write_sources
from bench.flow_children import parallel_call
from bench.workspace import Adapters, inherited_environment
from entrypoints.concerns.setting_reads import runtime_dir

NAME = "flow_waiting"
HOLD_POLICY = "bench-hold"
CHILDREN = 8
DELEGATED_BATCHES = 4
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class Hold:
    """A model policy whose answers wait until ``release``; counts the requests held."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self._arrived = threading.Condition()
        self.held = 0

    def policy(self, _conversation: Conversation, _state: PolicyState) -> Reply:
        with self._arrived:
            self.held += 1
            self._arrived.notify_all()
        self.released.wait(timeout=600.0)
        return Reply("released")

    def wait_for(self, count: int, timeout: float) -> bool:
        with self._arrived:
            return self._arrived.wait_for(lambda: self.held >= count, timeout=timeout)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def memory_mib(pid: int | str, key: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {key} for {pid}")


def flow_driver_waiting(base: Path, seconds: float) -> Json:
    """One flow run whose 8 children wait on the model for ``seconds``: its driver's figures."""
    hold = Hold()
    project, agent_dir, root = base / "project", base / "agent", base / "root"
    project.mkdir(parents=True)
    call_file = base / "call.json"
    call_file.write_text(json.dumps(parallel_call(CHILDREN)), encoding="utf-8")
    with ScriptedModelServer(HOLD_POLICY, policies={HOLD_POLICY: hold.policy}) as server:
        write_models_json(agent_dir, server.base_url)
        env = {
            **inherited_environment(),
            "PI_SQUAD_ROOT": str(root),
            "HOME": str(base / "home"),
            "PI_CODING_AGENT_DIR": str(agent_dir),
        }
        script = str(Path(sys.executable).parent / "pi-squad")
        argv = [script, "flow", "--call", str(call_file), "--cwd", str(project), "--json"]
        argv += ["--provider", PROVIDER, "--model", MODEL_ID]
        driver = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
        )
        try:
            if not hold.wait_for(CHILDREN, timeout=180.0):
                raise RuntimeError(f"only {hold.held} of {CHILDREN} children reached the model")
            begin_cpu, begin = cpu_seconds(driver.pid), time.monotonic()
            time.sleep(seconds)
            cpu, wall = cpu_seconds(driver.pid) - begin_cpu, time.monotonic() - begin
            rss, hwm = memory_mib(driver.pid, "VmRSS"), memory_mib(driver.pid, "VmHWM")
        finally:
            hold.released.set()
        out, err = driver.communicate(timeout=180.0)
    document = json.loads(out.decode() or "{}")
    if driver.returncode != 0 or document.get("status") != "completed":
        raise RuntimeError(f"flow ended {driver.returncode}: {out[-2000:]!r} {err[-2000:]!r}")
    return {"share": 100.0 * cpu / wall, "rss_mib": rss, "hwm_mib": hwm}


def delegation_host_waiting(adapters: Adapters, base: Path, seconds: float) -> Json:
    """A collect waiting ``seconds`` on one batch while 32 jobs run: this process's figures."""
    rss_before = memory_mib("self", "VmRSS")
    project = base / "project"
    project.mkdir(parents=True)
    names = write_sources(project, 200)
    session = Session(adapters, base / "root", project)
    ids: list[str] = []
    for start in range(0, len(names), 50):
        ids += session.capture(names[start : start + 50])
    batches = [session.run(f"w{batch}", ids) for batch in range(DELEGATED_BATCHES)]
    running = len(session.runtime.starts)
    if running != DELEGATED_BATCHES * 8:
        raise RuntimeError(f"{running} jobs started, {DELEGATED_BATCHES * 8} expected")
    begin_cpu, begin = time.process_time(), time.monotonic()
    answer = session.collect(batches[0]["batchId"], wait_ms=int(seconds * 1000))
    cpu, wall = time.process_time() - begin_cpu, time.monotonic() - begin
    if answer["items"]:
        raise RuntimeError("a job reported while none should")
    rss = memory_mib("self", "VmRSS")
    return {"share": 100.0 * cpu / wall, "rss_mib": rss, "growth_mib": rss - rss_before}


def add_share(result: Result, measure_id: str, label: str, runs: Sequence[Json]) -> None:
    """A waiting driver's CPU, as a share of one core: the target is under 1%."""
    shares = [run["share"] for run in runs]
    label = f"{label}, share of one core"
    result.add(measure_id, label, shares, unit="%", target="< 1%", met=median(shares) < 1.0)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(NAME, "Driver CPU and RSS while flow children and jobs wait.", argv)
    result = Result(NAME, quick=args.quick)
    seconds, runs = (1.0, 1) if args.quick else (10.0, 3)
    adapters = Adapters.real()
    delegated: list[Json] = []
    flows: list[Json] = []
    with scratch(NAME, keep=args.keep) as base:
        for run in range(runs):
            delegated.append(delegation_host_waiting(adapters, base / f"d{run}", seconds))
            progress(f"delegation run {run + 1}/{runs}: {delegated[-1]}")
        try:
            locate_runtime(None, os.environ, runtime_override=runtime_dir(os.environ))
        except PiRuntimeUnavailable as error:
            result.skip(f"real Pi runtime not installed (flow rows skipped): {error}")
        else:
            for run in range(runs):
                flows.append(flow_driver_waiting(base / f"f{run}", seconds))
                progress(f"flow run {run + 1}/{runs}: {flows[-1]}")
    window = f"{seconds:g} s"
    if flows:
        add_share(
            result,
            "wait.flow_driver_cpu",
            f"flow driver (pi-squad flow, own process) CPU while {CHILDREN} real children wait "
            f"on the model for {window}",
            flows,
        )
        result.add(
            "wait.flow_driver_rss",
            f"flow driver RSS (VmRSS) while {CHILDREN} children wait",
            [run["rss_mib"] for run in flows],
            unit="MiB",
        )
    jobs = DELEGATED_BATCHES * 8
    add_share(
        result,
        "wait.delegation_collect_cpu",
        f"delegation host CPU while a collect waits {window} and {jobs} jobs run (200 sources)",
        delegated,
    )
    result.add(
        "wait.delegation_rss_growth",
        f"delegation host RSS growth with the session and {jobs} running jobs (VmRSS, this "
        "process, against before the session)",
        [run["growth_mib"] for run in delegated],
        unit="MiB",
    )
    result.extra.update({"seconds": seconds, "children": CHILDREN, "jobs": jobs})
    return result.finish(args.results_dir)


if __name__ == "__main__":
    raise SystemExit(main())
