"""Cancelling a flow (the CLI's Ctrl+C): live children are killed, nothing more spawns, and the
runs that settled before it are reported."""

from __future__ import annotations

import threading

from tests.fakes.child_runtime import FakeChild
from tests.unit.application.flows.engine import WHY, Engine


def test_cancelling_kills_live_children_and_spawns_no_more(engine: Engine) -> None:
    def hang_then_cancel(child: FakeChild) -> None:
        threading.Timer(0.05, engine.runner.cancel).start()

    engine.scripted.scripts["task-0"] = hang_then_cancel
    tasks = [{"agent": "researcher", "task": f"t{i}"} for i in range(3)]
    document = engine.run(
        {"tasks": tasks, "why": WHY, "concurrency": 1, "tier": "capable"}
    ).document()
    (child,) = engine.scripted.runtime.spawned
    assert child.killed
    assert document["status"] == "cancelled"
    assert [r["error"]["code"] for r in document["results"]] == ["CHILD_ABORTED"] * 3
    assert document["summary"].startswith("Flow parallel cancelled: 0/3")


def test_a_cancelled_chain_stops_with_the_runs_that_settled(engine: Engine) -> None:
    engine.scripted.scripts["step-2"] = lambda child: threading.Timer(
        0.05, engine.runner.cancel
    ).start()
    steps = [{"agent": "researcher", "task": f"s{i}"} for i in range(3)]
    document = engine.run({"task": "g", "chain": steps, "why": WHY}).document()
    assert [r["status"] for r in document["results"]] == ["completed", "failed", "skipped"]
    assert document["results"][1]["error"]["code"] == "CHILD_ABORTED"
    assert document["status"] == "cancelled"
