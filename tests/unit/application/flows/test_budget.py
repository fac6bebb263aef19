"""Flow budgets on fakes and a fake clock: a crossed cost/generated ceiling stops the active
child and refuses new ones (``BUDGET_EXCEEDED``); ``maxTokens`` keeps the completed response
and refuses new ones; an unreported cost under ``maxCostUsd`` is ``BUDGET_UNOBSERVABLE``; at
80% every live child of the shared budget is steered to wrap up, and one whose notice was seen
echoed into its session settles ``budget_wrap_up`` when it crosses. Children that must be
steered while alive are driven from the test's thread (their scripts do nothing at spawn)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from application.flows.flow_card import flow_card
from application.flows.flow_report import FlowReport
from application.flows.run_flow import FlowContext, FlowRunner
from application.ports import AssistantText, SteerDelivered
from domain.flows.budget import WRAP_UP_MARKER
from tests.fakes.child_runtime import FakeChild
from tests.fakes.tracing import FakeTraceSinks
from tests.unit.application.flows.engine import WHY, Engine
from tests.unit.application.flows.envelopes import ID, envelope, fenced
from tests.unit.domain.flows.test_contracts import contract

SIZED = {"why": WHY, "tier": "capable"}


def _tasks(n: int) -> list[dict[str, Any]]:
    return [{"agent": "researcher", "task": f"part {i}"} for i in range(n)]


def _idle(child: FakeChild) -> None:
    """A child that starts and waits to be driven by the test."""


def _live(runner: FlowRunner) -> int:
    dispatcher = runner._dispatcher
    return 0 if dispatcher is None else len(dispatcher._live)


class Driven:
    """``engine.run(call)`` on a thread, so the test can drive live children."""

    def __init__(self, engine: Engine, call: dict[str, Any], **run: Any) -> None:
        self.engine = engine
        self.report: list[FlowReport] = []
        self.thread = threading.Thread(target=lambda: self.report.append(engine.run(call, **run)))
        self.thread.start()

    def wait_live(self, count: int) -> list[FakeChild]:
        """The live children in task order (they spawn on threads of their own, in any order)."""
        deadline = time.monotonic() + 10
        while _live(self.engine.runner) < count:
            assert time.monotonic() < deadline, "children did not start"
            time.sleep(0.005)
        return sorted(self.engine.scripted.runtime.spawned, key=lambda child: child.task_id)

    def document(self) -> dict[str, Any]:
        self.thread.join(10)
        assert not self.thread.is_alive()
        return self.report[0].document()


def _echo(child: FakeChild) -> None:
    """Pi echoes each steered message into the session as a user message."""
    for message in child.steers:
        child.sink(SteerDelivered(child.task_id, child.child_id, message))


def _say(child: FakeChild, text: str, *, out: int, cost: float = 0.0, into: int = 0) -> None:
    child.sink(AssistantText(child.task_id, child.child_id, text, into, out, cost))


def _answers(text: str, *, out: int, cost: float = 0.0) -> Callable[[FakeChild], None]:
    def script(child: FakeChild) -> None:
        _say(child, text, out=out, cost=cost)
        child.settle()

    return script


def test_a_crossed_generated_ceiling_stops_the_child_and_refuses_the_rest(tmp_path: Path) -> None:
    engine = Engine(tmp_path)

    def jumps(child: FakeChild) -> None:
        _say(child, "a long answer", out=600)  # 0 to 120% in one response: no wrap-up possible
        child.settle()

    engine.scripted.default = jumps
    call = {"tasks": _tasks(3), **SIZED, "concurrency": 1, "maxGeneratedTokens": 500}
    document = engine.run(call).document()
    (child,) = engine.scripted.runtime.spawned  # the others were refused, never spawned
    assert child.killed
    assert child.steers == []
    first, *rest = document["results"]
    assert (first["status"], first["error"]["code"], first["stopReason"]) == (
        "failed",
        "BUDGET_EXCEEDED",
        "budget_exceeded",
    )
    assert first["output"] is None  # a hard stop forfeits the crossing response
    assert "maxGeneratedTokens reached: 600 of 500 generated tokens" in first["error"]["message"]
    assert [(r["status"], r["error"]["code"]) for r in rest] == [("failed", "BUDGET_EXCEEDED")] * 2
    assert document["status"] == "failed"
    assert document["budget"]["exhausted"] == ["flow"]


def test_a_cost_ceiling_stops_a_chain_at_the_crossing_step(tmp_path: Path) -> None:
    engine = Engine(tmp_path)
    engine.scripted.scripts["step-1"] = _answers("x", out=5, cost=0.3)
    chain = [{"agent": "researcher", "task": "a"}, {"agent": "reviewer", "task": "b {previous}"}]
    document = engine.run({"task": "T", "chain": chain, "why": WHY, "maxCostUsd": 0.25}).document()
    assert [r["status"] for r in document["results"]] == ["failed", "skipped"]
    assert document["results"][0]["error"]["code"] == "BUDGET_EXCEEDED"
    assert len(engine.scripted.runtime.spawned) == 1


def test_max_tokens_keeps_the_completed_response_and_refuses_new_children(tmp_path: Path) -> None:
    engine = Engine(tmp_path)

    def answers(child: FakeChild) -> None:
        _say(child, "kept answer", into=80, out=40)  # 120 of 100 total tokens
        child.settle()

    engine.scripted.default = answers
    call = {"tasks": _tasks(3), **SIZED, "concurrency": 1, "maxTokens": 100}
    document = engine.run(call).document()
    (child,) = engine.scripted.runtime.spawned
    assert not child.killed
    assert child.steers == []
    first, *rest = document["results"]
    assert (first["status"], first["output"]) == ("completed", "kept answer")
    assert "stopReason" not in first
    assert [r["error"]["code"] for r in rest] == ["BUDGET_EXCEEDED"] * 2
    assert "maxTokens reached: 120 of 100 total tokens" in rest[0]["error"]["message"]
    assert document["status"] == "partial"


def test_a_cost_ceiling_with_no_reported_cost_is_budget_unobservable(tmp_path: Path) -> None:
    engine = Engine(tmp_path)

    def no_cost(child: FakeChild) -> None:
        child.sink(AssistantText(child.task_id, child.child_id, "hi", 3, 3, 0.0, False))
        child.settle()

    engine.scripted.default = no_cost
    call = {"agent": "researcher", "task": "t", "why": WHY, "maxCostUsd": 5}
    (result,) = engine.run(call).document()["results"]
    assert engine.scripted.runtime.spawned[0].killed
    assert (result["error"]["code"], result["stopReason"]) == (
        "BUDGET_UNOBSERVABLE",
        "budget_unobservable",
    )
    # Without a cost ceiling an unreported cost binds nothing.
    uncapped = Engine(tmp_path / "uncapped")
    uncapped.scripted.default = no_cost
    del call["maxCostUsd"]
    (result,) = uncapped.run(call).document()["results"]
    assert result["status"] == "completed"


def test_wrap_up_is_steered_to_every_live_child_of_the_shared_budget(tmp_path: Path) -> None:
    """One child's response takes the shared budget to 85%: all three live children are steered
    at once. Two see the notice echoed and settle gracefully when they cross; the third never
    showed it in its session and is hard-stopped."""
    engine = Engine(tmp_path, trace_sinks=FakeTraceSinks())
    engine.scripted.default = _idle
    call = {
        "tasks": _tasks(3),
        **SIZED,
        "concurrency": 3,
        "maxGeneratedTokens": 1000,
        "traceFile": "t.jsonl",
    }
    driven = Driven(engine, call)
    one, two, three = driven.wait_live(3)
    _say(one, "working", out=850)
    for child in (one, two, three):
        assert len(child.steers) == 1
        assert child.steers[0].startswith(WRAP_UP_MARKER)
        assert "maxGeneratedTokens: 850 of 1000 generated tokens" in child.steers[0]
    _echo(one)
    _echo(two)
    _say(two, "two's partial answer", out=200)  # crosses: 1050 of 1000
    _say(three, "three's answer", out=1)  # the budget is spent: stopped at this response
    _say(one, "one's partial answer", out=1)
    document = driven.document()
    assert all(child.killed for child in (one, two, three))
    results = {r["key"]: r for r in document["results"]}
    for key, text in (("task-0", "one's partial answer"), ("task-1", "two's partial answer")):
        assert (results[key]["status"], results[key]["stopReason"]) == (
            "completed",
            "budget_wrap_up",
        )
        assert results[key]["output"] == text
    assert results["task-2"]["error"]["code"] == "BUDGET_EXCEEDED"
    assert results["task-2"]["stopReason"] == "budget_exceeded"
    # Each notice sent, and each budget stop, is a budget event on the trace.
    spans = engine.runner._trace_sinks.last.written  # type: ignore[union-attr]
    events = [
        (s.attributes["flow.unit_key"], s.name, s.attributes.get("flow.budget.wrapup_delivered"),
         s.attributes.get("flow.budget.graceful"))
        for s in spans
        if s.attributes.get("flow.event_kind") == "budget"
    ]  # fmt: skip
    assert sorted(events) == [
        ("task-0", "child.exhausted", None, True),
        ("task-0", "child.wrap_up", True, None),
        ("task-1", "child.exhausted", None, True),
        ("task-1", "child.wrap_up", True, None),
        ("task-2", "child.exhausted", None, False),
        ("task-2", "child.wrap_up", False, None),
    ]
    child_span = next(s for s in spans if s.name == "child.task-2")
    assert child_span.attributes["flow.budget.spent_generated_tokens"] == 1052
    assert child_span.attributes["flow.budget.limit_generated_tokens"] == 1000


def test_a_child_spawned_inside_the_window_is_steered_before_its_first_turn(
    tmp_path: Path,
) -> None:
    engine = Engine(tmp_path)
    engine.scripted.scripts["step-1"] = _answers("first", out=5, cost=0.85)
    engine.scripted.scripts["step-2"] = _idle
    chain = [{"agent": "researcher", "task": "a"}, {"agent": "reviewer", "task": "b"}]
    driven = Driven(engine, {"task": "T", "chain": chain, "why": WHY, "maxCostUsd": 1.0})
    second = _wait_for_step_two(driven)
    assert len(second.steers) == 1
    assert "$0.8500 of $1.0000" in second.steers[0]
    _echo(second)
    _say(second, "wrapped up", out=5, cost=0.2)
    document = driven.document()
    assert [r["status"] for r in document["results"]] == ["completed", "completed"]
    assert document["results"][1]["stopReason"] == "budget_wrap_up"
    assert "stopReason" not in document["results"][0]


def _wait_for_step_two(driven: Driven) -> FakeChild:
    deadline = time.monotonic() + 10
    while True:
        spawned = driven.engine.scripted.runtime.spawned
        if len(spawned) == 2 and _live(driven.engine.runner) == 1:
            return spawned[1]
        assert time.monotonic() < deadline
        time.sleep(0.005)


def test_a_steer_pi_accepted_but_never_echoed_keeps_the_hard_stop(tmp_path: Path) -> None:
    engine = Engine(tmp_path)
    engine.scripted.default = _idle
    driven = Driven(engine, {"agent": "researcher", "task": "t", "why": WHY, "maxCostUsd": 1.0})
    (child,) = driven.wait_live(1)
    _say(child, "a", out=1, cost=0.9)
    assert len(child.steers) == 1  # accepted by Pi's queue, never seen in the session
    _say(child, "b", out=1, cost=0.2)
    (result,) = driven.document()["results"]
    assert (result["status"], result["error"]["code"]) == ("failed", "BUDGET_EXCEEDED")


def test_ceilings_are_shown_before_the_first_child_and_on_the_card(tmp_path: Path) -> None:
    engine = Engine(tmp_path)
    seen: list[object] = []

    def spawned(child: FakeChild) -> None:
        seen.append("spawn")
        _answers("ok", out=1)(child)

    engine.scripted.default = spawned
    call = {"agent": "researcher", "task": "t", "why": WHY, "maxCostUsd": 2, "maxTokens": 900}
    report = engine.runner.run(call, _context(engine), ceilings=seen.append)
    assert seen == [["budget (flow): maxCostUsd $2.0000 · maxTokens 900"], "spawn"]
    card = flow_card(report)
    assert "  budget (flow): maxCostUsd $2.0000 · maxTokens 900" in card["lines"]
    (ceiling,) = card["budget"]["ceilings"]
    assert (ceiling["authority"], ceiling["maxCostUsd"], ceiling["maxTokens"]) == ("flow", 2, 900)
    # Uncapped: nothing shown, no budget in the report.
    quiet: list[object] = []
    plain = engine.runner.run(
        {"agent": "researcher", "task": "t", "why": WHY}, _context(engine), ceilings=quiet.append
    )
    assert quiet == []
    assert "budget" not in plain.document()


def _context(engine: Engine) -> FlowContext:
    return FlowContext(cwd=str(engine.cwd))


@pytest.mark.parametrize(
    ("field", "value"),
    [("maxCostUsd", -0.1), ("maxTokens", 1.5), ("maxGeneratedTokens", -1), ("maxTokens", True)],
)
def test_a_malformed_ceiling_is_refused_before_any_spawn(
    tmp_path: Path, field: str, value: object
) -> None:
    error = Engine(tmp_path).refuse({"agent": "researcher", "task": "t", "why": WHY, field: value})
    assert (str(error.code), error.path) == ("FLOW_INVALID", f"$.{field}")


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (lambda: fenced(envelope()), ("completed", None)),
        (lambda: fenced(envelope(data={"answer": 7})), ("failed", "RETURN_ENVELOPE_INVALID")),
        (
            lambda: fenced(envelope(contractId="sha256:" + "0" * 64)),
            ("failed", "RETURN_CONTRACT_MISMATCH"),
        ),
        (lambda: "I ran out of budget; here is prose.", ("failed", "RETURN_ENVELOPE_INVALID")),
    ],
)
def test_a_graceful_wrap_up_still_goes_through_envelope_validation(
    tmp_path: Path, answer: Callable[[], str], expected: tuple[str, str | None]
) -> None:
    """Seed 004: a contracted child that crosses after its wrap-up notice reached it settles as
    ``budget_wrap_up``, and its output is still judged as a return envelope: a valid one is
    kept, an invalid one fails the run with the envelope's code, not a budget code."""
    engine = Engine(tmp_path)
    engine.scripted.default = _idle
    call = {"agent": "researcher", "contract": contract(), "why": WHY, "maxGeneratedTokens": 100}
    driven = Driven(engine, call)
    (child,) = driven.wait_live(1)
    _say(child, "working", out=85)
    (notice,) = child.steers
    assert ID in notice, "the notice names the contract the envelope must echo"
    _echo(child)
    _say(child, answer(), out=20)  # crosses 100 after the notice reached it
    (result,) = driven.document()["results"]
    assert result["stopReason"] == "budget_wrap_up"
    assert (result["status"], (result.get("error") or {}).get("code")) == expected
    assert ("envelope" in result) is (expected[0] == "completed")
