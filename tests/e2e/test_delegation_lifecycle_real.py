"""Delegated workers on real Pi 0.80.10 across their lifecycle: cancellation mid-run, a host
restart or kill, and the main Pi's own ``delegate`` tool and session switches. Skipped without
the project runtime."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from adapters.delegation.store import FileDelegationStore
from adapters.pi_runtime import PiRuntime
from adapters.scripted_model import ScriptedModelServer
from adapters.store.lock import FastenersLockFactory
from domain.delegation.lifecycle import State
from tests.e2e.delegation_world import (  # noqa: F401 - the fixture
    Delegation,
    delegation_world,
    main_collect,
    main_collected,
    main_pi_delegates,
    slow_job,
)
from tests.e2e.real_pi import CLI_TIMEOUT_SECONDS
from tests.host_fs import host_file_system

pytestmark = pytest.mark.realpi


def test_a_job_cancelled_mid_run_publishes_no_late_result(
    tmp_path: Path, runtime: PiRuntime
) -> None:
    with slow_job(tmp_path) as (world, job, worker):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            state = world.cli("status", None)
            batch = state["batches"][0]["jobs"][0]
            if batch["state"] == "running" and len(world.model.exchanges()) >= 2:
                break
            time.sleep(0.3)
        cancelled = world.cli("cancel", {"version": 1, "op": "cancel", "batchId": job["batchId"]})
        assert cancelled["cancelled"] == [job["jobId"]]
        out, err = worker.communicate(timeout=CLI_TIMEOUT_SECONDS)
        assert worker.returncode == 0, out + err
        item = world.collect(job["batchId"])["items"][0]
        receipt = item["receipt"]
        assert receipt["hostStatus"] == "cancelled"
        assert item["result"] is None
        assert receipt["settlement"] == "settled"
        # The killed worker's report arrived after the revocation: dropped, never published.
        assert receipt["observations"]["lateResultsDropped"] == 1
        asked = len(world.model.exchanges())
        time.sleep(1.0)
        assert len(world.model.exchanges()) == asked  # nothing runs after the kill


def test_collect_across_a_host_restart(delegation: Delegation) -> None:
    job = delegation.run("valid", delegation.capture())
    first = delegation.collect(job["batchId"])
    assert first["items"] == []
    assert first["pending"]
    worker = delegation.work()
    out, err = worker.communicate(timeout=CLI_TIMEOUT_SECONDS)
    assert worker.returncode == 0, out + err
    # Each collect is a new process: a host built from the durable session alone.
    after = delegation.collect(job["batchId"])
    again = delegation.collect(job["batchId"])
    assert after["items"] == again["items"]
    assert after["items"][0]["receipt"]["hostStatus"] == "ready"
    cursor = after["collectionCursor"]
    assert delegation.collect(job["batchId"], afterCursor=cursor)["items"] == []


def _recorded_worker(world: Delegation) -> int | None:
    """The running attempt's worker pid as the host recorded it (read through the store)."""
    root = str(world.base / "root")
    state = FileDelegationStore(host_file_system(), FastenersLockFactory(), root).snapshot("s1")
    if state is None:
        return None
    for _, _, attempt in state.attempts():
        if attempt.state is State.RUNNING and attempt.worker is not None:
            return attempt.worker.pid
    return None


def test_collect_after_the_host_was_killed_mid_job(tmp_path: Path, runtime: PiRuntime) -> None:
    """``delegate work`` killed with SIGKILL while its worker runs: the next CLI process
    settles the job at once (``host_lost``, not at its deadline), the worker Pi is gone, and
    ``collect`` across the restart returns the failure."""
    with slow_job(tmp_path) as (world, job, host):
        model = world.model
        deadline = time.monotonic() + 60
        worker = None
        while time.monotonic() < deadline:
            worker = _recorded_worker(world)
            if worker is not None and len(model.exchanges()) >= 2:
                break
            time.sleep(0.2)
        assert worker is not None, "the worker ran"
        host.send_signal(signal.SIGKILL)
        host.wait(10)
        started = time.monotonic()
        status = world.cli("status", None)
        row = status["batches"][0]["jobs"][0]
        assert row["state"] == "failed"
        item = world.collect(job["batchId"])["items"][0]
        receipt = item["receipt"]
        assert receipt["observations"]["stopReason"] == "host_lost"
        assert receipt["settlement"] == "settled"
        assert receipt["problem"].startswith("host_lost: pid ")
        assert item["result"] is None
        assert time.monotonic() - started < 60  # not the job's 120 s deadline
        assert not _alive(worker)
        asked = len(model.exchanges())
        time.sleep(1.0)
        assert len(model.exchanges()) == asked  # nothing runs after the settlement


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as file:
            return file.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_the_main_pis_delegate_tool_runs_a_worker_in_its_bridge(
    tmp_path: Path, runtime: PiRuntime
) -> None:
    """With a policy file the main role offers ``delegate``; a ``run`` through it starts a real
    worker in the main bridge's process, whose result the CLI then collects."""
    with ScriptedModelServer("echo") as model:
        world = Delegation(base=tmp_path, model=model)
        world.setup()
        client, batch_id = main_pi_delegates(world, runtime, "valid")
        try:
            items = main_collected(world, batch_id)
        finally:
            client.close()
        assert items, "the worker in the main bridge published its result"
        assert items[0]["receipt"]["hostStatus"] == "ready"
        assert items[0]["result"]["answer"] == "no sources"


def test_a_main_pi_session_switch_cancels_its_running_workers(
    tmp_path: Path, runtime: PiRuntime
) -> None:
    """Pi's ``new_session`` (``session_before_switch``, then ``session_shutdown``): the main
    host navigates, so the running job is cancelled, its worker killed and nothing published."""
    from domain.delegation.navigation import navigation_reason

    with ScriptedModelServer("echo", chunk_delay=0.2) as model:
        world = Delegation(base=tmp_path, model=model)
        # Room for 30 slow turns: the switch lands long before the request limit would.
        world.setup(maxRequests=30)
        client, batch_id = main_pi_delegates(world, runtime, "slow", max_requests=30)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                asked = [
                    e for e in model.exchanges() if e.policy == "worker" and e.reply.tool_calls
                ]
                if asked:
                    break
                time.sleep(0.3)
            client.command({"type": "new_session"}, timeout=60)
            item = main_collect(world, batch_id, wait_ms=0)["items"][0]
        finally:
            client.close()
        receipt = item["receipt"]
        assert receipt["hostStatus"] == "cancelled"
        # The before-event's navigation (sent first, not awaited) normally wins the store lock;
        # the shutdown's navigation is the second chance.
        assert receipt["reason"] in {
            f"task navigation: {navigation_reason(event, reason='new')}"
            for event in ("session_before_switch", "session_shutdown")
        }
        assert receipt["settlement"] == "settled"
        assert item["result"] is None
        calls = len(model.exchanges())
        time.sleep(1.0)
        assert len(model.exchanges()) == calls  # the worker is gone
