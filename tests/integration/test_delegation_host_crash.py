"""A `delegate` host killed mid-job (a subprocess on the real file system, SIGKILL): the next
host's transaction settles the job at once (``host_lost``) instead of at its deadline, stops
the orphaned worker only because its identity matches exactly, and ``collect`` across the
restart returns that failure. Also the ``/proc`` adapter on its own. Linux only."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from adapters.system.processes import ProcProcesses
from domain.delegation.session import ProcessRecord
from tests.integration.delegation_crash_host import host

pytestmark = pytest.mark.skipif(
    not os.path.exists("/proc/self/stat"), reason="process identity needs /proc"
)
REPO = Path(__file__).resolve().parents[2]


class NoWorkers:
    def start(self, start: Any) -> None:
        raise AssertionError("the recovering host starts nothing here")

    def cancel(self, lease: Any) -> bool:
        return False


def _crashed_host(root: Path) -> tuple[int, subprocess.Popen[str]]:
    """A host subprocess with one running job; killed with SIGKILL. Its worker's pid."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.delegation_crash_host", str(root)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("READY "), line
    process.send_signal(signal.SIGKILL)
    process.wait(10)
    return int(line.split()[1]), process


def _reap(pid: int) -> None:
    """The orphaned ``sleep`` was re-parented; wait until it is gone from /proc."""
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as file:
            if file.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                return
        time.sleep(0.05)


def _batch(collected: dict[str, Any]) -> str:
    batch_id: str = collected["batches"][0]["batchId"]
    return batch_id


def test_a_killed_hosts_job_is_settled_by_the_next_host_and_collected(tmp_path: Path) -> None:
    worker, _ = _crashed_host(tmp_path)
    try:
        assert ProcProcesses().identify(worker) is not None  # the worker outlived its host
        fresh = host(str(tmp_path), NoWorkers(), dispatching=False)
        status = fresh.handle({"version": 1, "op": "status"})
        batch_id = _batch(status)
        # The orphaned worker was stopped: its identity matched the record exactly.
        _reap(worker)
        assert ProcProcesses().identify(worker) is None
        again = fresh.handle({"version": 1, "op": "status", "batchId": batch_id})
        row = again["jobs"][0]
        assert (row["state"], row["settlement"]) == ("failed", "settled")
        # Another fresh host (a restart) collects the same result from the store alone.
        collected = host(str(tmp_path), NoWorkers(), dispatching=False).handle(
            {"version": 1, "op": "collect", "batchId": batch_id}
        )
        receipt = collected["items"][0]["receipt"]
        assert receipt["hostStatus"] == "failed"
        assert receipt["observations"]["stopReason"] == "host_lost"
        assert receipt["observations"]["workerProcess"] == worker
        assert collected["pending"] == []
        ledger = fresh.handle({"version": 1, "op": "status"})
        assert ledger["ledger"]["reserved"] == 0
        assert ledger["ledger"]["consumed"] == 1
        assert ledger["settling"] == 0
    finally:
        if os.path.exists(f"/proc/{worker}"):
            os.kill(worker, signal.SIGKILL)


def test_a_worker_that_died_with_its_host_is_settled_without_a_signal(tmp_path: Path) -> None:
    worker, _ = _crashed_host(tmp_path)
    os.kill(worker, signal.SIGKILL)
    _reap(worker)
    fresh = host(str(tmp_path), NoWorkers(), dispatching=False)
    batch_id = _batch(fresh.handle({"version": 1, "op": "status"}))
    row = fresh.handle({"version": 1, "op": "status", "batchId": batch_id})["jobs"][0]
    assert (row["state"], row["settlement"]) == ("failed", "settled")


def test_proc_processes_recognise_exactly_one_process() -> None:
    processes = ProcProcesses()
    me = processes.me()
    assert me is not None
    assert me.pid == os.getpid()
    assert processes.alive(me) is True
    boot, namespace, start = me.identity.split(":")
    # Another start time under the same pid: a reused pid, provably not that process.
    assert processes.alive(ProcessRecord(me.pid, f"{boot}:{namespace}:{int(start) + 1}")) is False
    # Another boot: everything of it is gone.
    assert processes.alive(ProcessRecord(me.pid, f"other-boot:{namespace}:{start}")) is False
    # Another pid namespace: its pids are not ours to read.
    assert processes.alive(ProcessRecord(me.pid, f"{boot}:1:{start}")) is None
    # A process with a reused-looking identity is never signalled.
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        record = processes.identify(child.pid)
        assert record is not None
        forged = ProcessRecord(child.pid, record.identity + "0")
        assert processes.terminate(forged) is True  # "gone": that process is not running
        assert child.poll() is None  # and the live one was not touched
        assert processes.terminate(record) is True
        assert child.wait(5) == -signal.SIGTERM
        assert processes.alive(record) is False
    finally:
        if child.poll() is None:
            child.kill()
