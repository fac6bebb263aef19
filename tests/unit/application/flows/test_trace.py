"""Flow traces on fakes: the span topology of each built mode, dependency links (never
parentage), the root's times and export health, redaction and caps, and ``traceStrict``."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from application.flows.trace_setup import TraceDefaults
from domain.errors import ErrorCode
from domain.flows.errors import FlowError
from tests.fakes.flows import FakePresetDirectory, agent
from tests.fakes.tracing import FakeSpan, FakeTraceSinks
from tests.unit.application.flows.engine import WHY, TracedEngine


@pytest.fixture
def engine(tmp_path: Path) -> TracedEngine:
    return TracedEngine(tmp_path)


def _graph() -> dict[str, Any]:
    nodes = [
        {"id": "a", "agent": "researcher", "task": "A"},
        {"id": "b", "agent": "researcher", "task": "B", "dependsOn": ["a"]},
        {"id": "c", "agent": "researcher", "task": "C", "dependsOn": ["a"]},
        {"id": "d", "agent": "reviewer", "task": "D", "dependsOn": ["b", "c"]},
    ]
    return {"task": "g", "graph": {"nodes": nodes}, "why": WHY, "traceFile": "trace.jsonl"}


def test_a_graph_trace_nests_children_under_waves_and_links_dependencies(
    engine: TracedEngine,
) -> None:
    for key, seconds in {"node-a": 1, "node-b": 2, "node-c": 5, "node-d": 1}.items():
        engine.takes(key, seconds)
    report = engine.run(_graph())
    tracer = engine.tracer
    assert tracer.path == str(engine.cwd / "trace.jsonl")
    root = tracer.root
    stages = tracer.by_role("stage")
    children = {s.attributes["flow.unit_key"]: s for s in tracer.by_role("child")}
    assert [s.attributes["flow.stage_key"] for s in stages] == ["wave-1", "wave-2", "wave-3"]
    assert [s.attributes["flow.stage_span_count"] for s in stages] == [1, 2, 1]
    assert all(s.parent == root.ref for s in stages)
    stage_of = {s.attributes["flow.stage_key"]: s.ref for s in stages}
    assert children["node-a"].parent == stage_of["wave-1"]
    assert children["node-b"].parent == children["node-c"].parent == stage_of["wave-2"]
    # d read b's and c's output, but its wave scheduled it: links, not parentage; and it
    # links through the handoff each output crossed (seed: through ``.handoff``, not around).
    d = children["node-d"]
    assert d.parent == stage_of["wave-3"]
    handoffs = tracer.by_role("event")
    into_d = [
        h for h in handoffs if h.attributes["flow.unit_key"] in ("node-b.handoff", "node-c.handoff")
    ]
    assert [h.links for h in into_d] == [(children["node-b"].ref,), (children["node-c"].ref,)]
    assert set(d.links) == {h.ref for h in into_d}
    assert d.attributes["flow.depends_on"] == "node-b.handoff,node-c.handoff"
    assert d.attributes["flow.depends_on_span_ids"] == ",".join(h.ref.span_id for h in into_d)
    # a's output crossed twice (to b and to c): one handoff event per boundary.
    assert children["node-b"].links != children["node-c"].links
    assert len(handoffs) == 4
    for event in handoffs:
        assert event.name == "handoff.accepted"
        assert event.attributes["flow.handoff.compatibility"] == "legacy-prose"
    assert d.attributes["flow.depends_on_truncated"] is False
    assert "flow.depends_on_unresolved" not in d.attributes
    assert d.attributes["flow.agent"] == "reviewer"
    assert d.attributes["openinference.span.kind"] == "AGENT"
    assert d.attributes["flow.duration_ms"] == 1000
    assert d.attributes["llm.token_count.prompt"] == 5
    assert d.attributes["flow.thinking_level_verified"] is False
    assert str(d.attributes["flow.agent_prompt_version"]).startswith("sha256:")
    # Every span names its flow call and role.
    for span in tracer.written:
        assert span.attributes["flow.invocation_id"] == report.flow_id
        assert span.attributes["flow.mode"] == "graph"
        assert span.attributes["flow.span_role"] in {"root", "stage", "child", "event"}
    # Root: elapsed, worker (the sum) and critical path (a → c → d) are distinct numbers.
    assert root.attributes["flow.elapsed_time_ms"] == 9000
    assert root.attributes["flow.worker_time_ms"] == 9000
    assert root.attributes["flow.critical_path_ms"] == 7000
    assert root.attributes["flow.critical_path_available"] is True
    assert root.attributes["flow.status"] == "completed"
    assert root.end_ns is not None
    assert root.end_ns - root.start_ns == 9_000_000_000
    assert root.attributes["flow.trace.expected_spans"] == 12
    assert root.attributes["flow.trace.observed_spans"] == 12
    assert root.attributes["flow.trace.dropped_spans"] == 0
    assert root.attributes["flow.trace.failed_exports"] == 0
    assert root.attributes["flow.trace.health"] == "recorded"
    assert tracer.closed
    trace = report.document()["trace"]
    assert trace["spans"] == {
        "expected": 12,
        "observed": 12,
        "dropped": 0,
        "redacted": 0,
        "failedExports": 0,
        "health": "recorded",
    }
    assert trace["rootSpanId"] == root.ref.span_id
    assert trace["structure"] == {"stages": 3, "children": 4, "events": 4}


def test_parallel_is_one_fan_out_stage_and_its_critical_path_is_the_longest_task(
    engine: TracedEngine,
) -> None:
    engine.takes("task-0", 3)
    engine.takes("task-1", 1)
    tasks = [{"agent": "researcher", "task": f"t{i}"} for i in range(2)]
    engine.run(
        {"tasks": tasks, "why": WHY, "traceFile": "t.jsonl", "concurrency": 1, "tier": "capable"}
    )
    (stage,) = engine.tracer.by_role("stage")
    assert stage.attributes["flow.stage_key"] == "fan-out"
    assert all(c.parent == stage.ref for c in engine.tracer.by_role("child"))
    assert engine.tracer.root.attributes["flow.critical_path_ms"] == 3000
    assert engine.tracer.root.attributes["flow.worker_time_ms"] == 4000


def test_a_stopped_chain_links_each_step_to_the_previous_and_records_the_skip_as_an_event(
    engine: TracedEngine,
) -> None:
    engine.scripted.scripts["step-2"] = lambda child: child.exit(1)
    steps = [{"agent": "researcher", "task": f"s{i}"} for i in range(3)]
    engine.run({"task": "g", "chain": steps, "why": WHY, "traceFile": "t.jsonl"})
    tracer = engine.tracer
    children = {s.attributes["flow.unit_key"]: s for s in tracer.by_role("child")}
    assert set(children) == {"step-1", "step-2"}
    handoff = tracer.named("handoff.accepted")
    assert handoff.links == (children["step-1"].ref,)
    assert children["step-2"].links == (handoff.ref,)
    assert children["step-2"].attributes["flow.depends_on"] == "step-1.handoff"
    assert children["step-2"].error is not None
    assert children["step-2"].attributes["flow.error_code"] == "CHILD_EXIT_NONZERO"
    (skip,) = tracer.by_role("event")[1:]
    assert skip.name == "run.skipped"
    assert skip.attributes["flow.event_kind"] == "state"
    assert skip.attributes["flow.unit_key"] == "step-3"
    assert skip.end_ns == skip.start_ns
    assert skip.parent == tracer.root.ref
    assert tracer.root.attributes["flow.status"] == "failed"
    assert tracer.root.attributes["flow.trace.expected_spans"] == 7


def test_a_refused_call_writes_a_validation_event_and_an_error_root(
    engine: TracedEngine,
) -> None:
    with pytest.raises(FlowError) as caught:
        engine.run({"agent": "nobody", "task": "t", "why": WHY, "traceFile": "t.jsonl"})
    assert caught.value.code is ErrorCode.UNKNOWN_AGENT
    tracer = engine.tracer
    (event,) = tracer.by_role("event")
    assert event.name == "call.refused"
    assert event.attributes["flow.event_kind"] == "validation"
    assert event.attributes["flow.error_code"] == "UNKNOWN_AGENT"
    assert tracer.root.error is not None
    assert tracer.root.attributes["flow.status"] == "refused"
    assert tracer.by_role("child") == []


def test_a_cancel_is_an_event(engine: TracedEngine) -> None:
    engine.scripted.scripts["task-0"] = lambda child: threading.Timer(
        0.05, engine.runner.cancel
    ).start()
    tasks = [{"agent": "researcher", "task": "t"}]
    engine.run({"tasks": tasks, "why": WHY, "traceFile": "t.jsonl"})
    (event,) = engine.tracer.by_role("event")
    assert event.name == "flow.cancelled"
    assert event.attributes["flow.event_kind"] == "state"
    assert engine.tracer.root.attributes["flow.status"] == "cancelled"


def test_a_failed_export_is_counted_and_the_flow_still_completes(tmp_path: Path) -> None:
    engine = TracedEngine(tmp_path, FakeTraceSinks(fail_spans=frozenset({"stage.single"})))
    report = engine.run({"agent": "researcher", "task": "t", "why": WHY, "traceFile": "t.jsonl"})
    assert report.status == "completed"
    root = engine.tracer.root
    assert root.attributes["flow.trace.expected_spans"] == 3
    assert root.attributes["flow.trace.observed_spans"] == 2
    assert root.attributes["flow.trace.dropped_spans"] == 1
    assert root.attributes["flow.trace.failed_exports"] == 1
    assert root.attributes["flow.trace.health"] == "degraded"
    spans = report.document()["trace"]["spans"]
    assert (spans["dropped"], spans["failedExports"], spans["health"]) == (1, 1, "degraded")


def test_an_unwritable_trace_file_is_counted_not_fatal(tmp_path: Path) -> None:
    sinks = FakeTraceSinks(unwritable={str(tmp_path / "project" / "t.jsonl"): "Permission denied"})
    engine = TracedEngine(tmp_path, sinks)
    report = engine.run({"agent": "researcher", "task": "t", "why": WHY, "traceFile": "t.jsonl"})
    assert report.status == "completed"
    trace = report.document()["trace"]
    assert trace["spans"] == {
        "expected": 3,
        "observed": 0,
        "dropped": 3,
        "redacted": 0,
        "failedExports": 3,
        "health": "missing",
    }
    assert "Permission denied" in trace["error"]


def test_trace_strict_refuses_an_unwritable_trace_file_before_any_spawn(tmp_path: Path) -> None:
    sinks = FakeTraceSinks(unwritable={str(tmp_path / "project" / "t.jsonl"): "Permission denied"})
    engine = TracedEngine(tmp_path, sinks)
    call = {"agent": "researcher", "task": "t", "why": WHY, "traceFile": "t.jsonl"}
    with pytest.raises(FlowError) as caught:
        engine.run({**call, "traceStrict": True})
    assert caught.value.code is ErrorCode.TRACE_INCOMPLETE
    assert caught.value.path == "$.traceFile"
    assert caught.value.document()["measured"] == "unwritable"
    assert engine.scripted.runtime.spawned == []


def test_trace_strict_without_a_trace_file_is_refused_and_the_environment_can_ask(
    tmp_path: Path,
) -> None:
    engine = TracedEngine(tmp_path, defaults=TraceDefaults(strict=True))
    with pytest.raises(FlowError) as caught:
        engine.run({"agent": "researcher", "task": "t", "why": WHY})
    assert caught.value.code is ErrorCode.TRACE_INCOMPLETE
    assert caught.value.document()["measured"] == "absent"
    assert engine.scripted.runtime.spawned == []
    # PI_FLOWS_TRACE_FILE supplies the file (relative to the call's cwd).
    with_file = TracedEngine(tmp_path, defaults=TraceDefaults(file="env.jsonl", strict=True))
    with_file.run({"agent": "researcher", "task": "t", "why": WHY})
    assert with_file.tracer.path == str(tmp_path / "project" / "env.jsonl")


def test_trace_strict_fails_the_call_when_a_span_was_not_written(tmp_path: Path) -> None:
    engine = TracedEngine(tmp_path, FakeTraceSinks(fail_spans=frozenset({"child.single"})))
    call = {"agent": "researcher", "task": "t", "why": WHY, "traceFile": "t.jsonl"}
    with pytest.raises(FlowError) as caught:
        engine.run({**call, "traceStrict": True})
    assert caught.value.code is ErrorCode.TRACE_INCOMPLETE
    measured = caught.value.document()["measured"]
    assert (measured["dropped"], measured["failedExports"]) == (1, 1)


def test_content_is_redacted_and_capped_and_withheld_without_record_content(
    engine: TracedEngine,
) -> None:
    secret = "sk-" + "A" * 30
    engine.takes("single", 1, text=f"key {secret} " + "x" * 40_000)
    call = {"agent": "researcher", "task": f"use {secret}", "why": WHY, "traceFile": "t.jsonl"}
    engine.run(call)
    child = engine.tracer.by_role("child")[0]
    assert secret not in str(child.attributes["input.value"])
    assert "[REDACTED:api-key]" in str(child.attributes["input.value"])
    output = str(child.attributes["output.value"])
    assert secret not in output
    assert len(output.encode()) < 17 * 1024
    assert engine.tracer.root.attributes["flow.trace.redacted_spans"] == 1
    engine.run({**call, "recordContent": False})
    child = engine.tracer.by_role("child")[0]
    assert "input.value" not in child.attributes
    assert "output.value" not in child.attributes


def test_label_and_context_are_on_every_span(engine: TracedEngine) -> None:
    context = {"runId": "r1", "caseId": "c@example.com", "trialId": "t1", "trialIndex": 2}
    engine.run(
        {
            "agent": "researcher",
            "task": "t",
            "why": WHY,
            "traceFile": "t.jsonl",
            "traceLabel": "release-gate",
            "traceContext": context,
        }
    )
    for span in engine.tracer.written:
        assert span.attributes["flow.trace_label"] == "release-gate"
        assert span.attributes["flow.run_id"] == "r1"
        assert span.attributes["flow.case_id"] == "[REDACTED:email]"
        assert span.attributes["flow.trial_index"] == 2
        assert "flow.arm" not in span.attributes
    # The redacted case id is on every span, so every span counts as redacted.
    assert engine.tracer.root.attributes["flow.trace.redacted_spans"] == 3


def test_no_trace_file_means_no_trace(engine: TracedEngine) -> None:
    report = engine.run({"agent": "researcher", "task": "t", "why": WHY})
    assert engine.sinks.opened == []
    assert "trace" not in report.document()


def _roles(spans: list[FakeSpan]) -> list[object]:
    return [span.role for span in spans]


def test_spans_end_children_first_and_the_root_last(engine: TracedEngine) -> None:
    engine.run({"agent": "researcher", "task": "t", "why": WHY, "traceFile": "t.jsonl"})
    assert _roles(engine.tracer.written) == ["child", "stage", "root"]


def test_a_preset_may_turn_the_strict_gate_on_but_never_off(tmp_path: Path) -> None:
    def preset(name: str, strict: bool) -> str:
        body = {"agent": "researcher", "task": "{task}", "traceStrict": strict}
        return f"---\nname: {name}\ndescription: d\n---\n{json.dumps(body)}"

    engine = TracedEngine(tmp_path)
    engine.runner._presets = FakePresetDirectory(user=(preset("gated", True), preset("lax", False)))
    for call in ({}, {"traceStrict": False}):
        with pytest.raises(FlowError) as caught:
            engine.run({"preset": "gated", "task": "t", "why": WHY, **call})
        assert caught.value.code is ErrorCode.TRACE_INCOMPLETE
    # The template's false is dropped: the environment's gate still holds.
    strict = TracedEngine(tmp_path, defaults=TraceDefaults(strict=True))
    strict.runner._presets = engine.runner._presets
    with pytest.raises(FlowError) as caught:
        strict.run({"preset": "lax", "task": "t", "why": WHY})
    assert caught.value.code is ErrorCode.TRACE_INCOMPLETE
    # A caller may always name the trace of a preset's run (here the bundled scout).
    engine.run({"preset": "scout", "task": "t", "why": WHY, "traceFile": "s.jsonl"})
    assert engine.tracer.root.attributes["flow.trace.health"] == "recorded"


@pytest.mark.parametrize("name", ["trace.txt", ".bashrc", "t.jsonl\u0000x.jsonl", ""])
def test_a_trace_file_must_name_a_jsonl_file(engine: TracedEngine, name: str) -> None:
    with pytest.raises(FlowError) as caught:
        engine.run({"agent": "researcher", "task": "t", "why": WHY, "traceFile": name})
    assert (caught.value.code, caught.value.path) == (ErrorCode.FLOW_INVALID, "$.traceFile")
    assert engine.scripted.runtime.spawned == []
    assert engine.sinks.opened == []


def test_an_environment_trace_file_that_is_not_jsonl_is_never_opened(tmp_path: Path) -> None:
    engine = TracedEngine(tmp_path, defaults=TraceDefaults(file="/home/u/.profile"))
    report = engine.run({"agent": "researcher", "task": "t", "why": WHY})
    assert engine.sinks.opened == []
    trace = report.document()["trace"]
    assert trace["spans"]["health"] == "missing"
    assert "PI_FLOWS_TRACE_FILE must name a .jsonl file" in trace["error"]


def test_each_judge_verdict_of_a_loop_is_a_state_event_naming_its_run(
    engine: TracedEngine,
) -> None:
    agents = ("operator", "redteam")
    engine.agents.bundled = (*engine.agents.bundled, *(agent(n, tools=("read",)) for n in agents))
    engine.takes("judge-1", 1, "VERDICT: REVISE\nNot yet.")
    engine.takes("judge-2", 1, '{"verdict": "pass"}')
    loop = {"body": {"agent": "operator"}, "judge": {"agent": "redteam"}}
    engine.run({"task": "g", "loop": loop, "why": WHY, "traceFile": "t.jsonl"})
    verdicts = [e for e in engine.tracer.by_role("event") if e.name == "loop.judge_verdict"]
    assert [e.attributes["flow.unit_key"] for e in verdicts] == ["judge-1", "judge-2"]
    assert [e.attributes["flow.control.value"] for e in verdicts] == ["REVISE", "PASS"]
    assert [e.attributes["flow.control.source"] for e in verdicts] == ["line", "json"]
    assert all(e.attributes["flow.event_kind"] == "state" for e in verdicts)
