"""The pure trace rules: unit-key escaping, the critical path, export health, and the read-back
report over rows (complete, dropped, not a tree, undeclared events, dangling links, legacy)."""

from __future__ import annotations

import json
from typing import Any

from domain.flows import trace_spans as ts
from domain.flows.trace_report import report


def test_unit_keys_are_percent_escaped_in_dependency_lists() -> None:
    assert ts.escape_key("build,linux") == "build%2Clinux"
    assert ts.escape_key("50%,x") == "50%25%2Cx"
    keys = ("build,linux", "50%", "plain")
    joined, cut = ts.joined(keys)
    assert joined == "build%2Clinux,50%25,plain"
    assert not cut
    assert ts.split_keys(joined) == keys
    many = tuple(f"k{i}" for i in range(ts.DEPENDS_ON_CAP + 3))
    joined, cut = ts.joined(many)
    assert cut
    assert len(ts.split_keys(joined)) == ts.DEPENDS_ON_CAP


def test_the_critical_path_follows_dependencies_and_is_never_fabricated() -> None:
    units = [
        ts.UnitTiming("a", 100),
        ts.UnitTiming("b", 200, ("a",)),
        ts.UnitTiming("c", 500, ("a",)),
        ts.UnitTiming("d", 100, ("b", "c")),
    ]
    assert ts.critical_path_ms(units) == 700
    assert ts.critical_path_ms([ts.UnitTiming("a", 5), ts.UnitTiming("b", 9)]) == 9
    assert ts.critical_path_ms([ts.UnitTiming("a", 5, ("ghost",))]) is None
    assert (
        ts.critical_path_ms([ts.UnitTiming("a", 5, ("b",)), ts.UnitTiming("b", 1, ("a",))]) is None
    )


def test_health_is_recorded_degraded_or_missing() -> None:
    assert ts.TraceHealth(4, 4).health is ts.Health.RECORDED
    assert ts.TraceHealth(4, 3).health is ts.Health.DEGRADED
    assert ts.TraceHealth(4, 4, failed_exports=1).health is ts.Health.DEGRADED
    assert ts.TraceHealth(4, 0, failed_exports=4).health is ts.Health.MISSING
    assert ts.TraceHealth(4, 3).dropped == 1


def test_bounded_values_are_redacted_then_cut() -> None:
    text, changed = ts.bounded("token sk-" + "a" * 30, redact_on=True, home=None, cap=1000)
    assert (text, changed) == ("token [REDACTED:api-key]", True)
    text, changed = ts.bounded("é" * 10, redact_on=False, home=None, cap=5)
    assert text == "éé…[cut]"
    assert changed
    assert ts.bounded("plain", redact_on=True, home=None, cap=10) == ("plain", False)


def _row(
    span: str, parent: str | None, role: str | None, attributes: dict[str, Any] | None = None
) -> str:
    found: dict[str, Any] = {
        "flow.invocation_id": "inv1",
        "flow.mode": "graph",
        **(attributes or {}),
    }
    if role is not None:
        found["flow.span_role"] = role
    return json.dumps(
        {
            "name": span,
            "context": {"trace_id": "0x" + "1" * 32, "span_id": f"0x{span:0>16}"},
            "parent_id": None if parent is None else f"0x{parent:0>16}",
            "status": {"status_code": "OK"},
            "attributes": found,
        }
    )


def _trace(root: dict[str, Any] | None = None) -> list[str]:
    declared = {
        "flow.trace.expected_spans": 4,
        "flow.trace.dropped_spans": 0,
        "flow.trace.failed_exports": 0,
        "flow.status": "completed",
        "flow.elapsed_time_ms": 900,
        "flow.worker_time_ms": 1200,
        "flow.critical_path_ms": 800,
        "flow.critical_path_available": True,
        **(root or {}),
    }
    return [
        _row("a1", "f1", "child", {"flow.status": "completed"}),
        _row("e1", "f1", "event", {"flow.event_kind": "state"}),
        _row("f1", "0", "stage"),
        _row("0", None, "root", declared),
    ]


def test_a_whole_trace_is_complete_and_keeps_execution_apart_from_verified_outcome() -> None:
    found = report("\n".join(_trace()) + "\n\n")
    assert found.complete
    (group,) = found.document()["groups"]
    assert group["executionSuccess"] == {"succeeded": 1, "total": 1}
    assert group["verifiedOutcomeSuccess"] is None
    assert (group["elapsedMs"], group["workerMs"], group["criticalPathMs"]) == (900, 1200, 800)
    assert group["topology"] == {"stageSpans": 1, "events": 1}
    assert group["health"]["observed"] == group["health"]["expected"] == 4
    assert "verified outcome success: unavailable" in found.lines()[0]


def test_what_makes_evidence_incomplete() -> None:
    lines = _trace()
    assert report("\n".join(lines[1:])).incomplete[0].problems == ("1 spans dropped",)
    (run,) = report("\n".join(lines[:2] + lines[3:])).incomplete
    assert run.problems == (
        "2 spans whose parent is missing (not a span tree)",
        "1 spans dropped",
    )
    assert report("\n".join(lines[:3])).incomplete[0].problems[0] == "no root span"
    odd = _trace()
    odd[1] = _row("e1", "f1", "event", {"flow.event_kind": "gossip"})
    assert report("\n".join(odd)).incomplete[0].problems == ("1 events of an undeclared kind",)
    failed = _trace({"flow.trace.failed_exports": 1})
    assert report("\n".join(failed)).incomplete[0].problems == ("1 failed exports",)
    garbage = report("\n".join([*_trace(), "{not json"]))
    assert not garbage.incomplete
    assert not garbage.complete
    assert garbage.malformed == 1
    assert not report("").complete


def test_a_dangling_link_is_counted_apart_and_is_not_incomplete_evidence() -> None:
    lines = _trace()
    lines[0] = _row("a1", "f1", "child", {"flow.depends_on_unresolved": "ghost%2C1,ghost2"})
    found = report("\n".join(lines))
    assert found.complete
    assert found.document()["groups"][0]["health"]["danglingLinks"] == 2


def test_legacy_rows_read_as_root_plus_children_with_worker_time_marked_legacy() -> None:
    rows = [
        _row("a1", "0", None, {"flow.agent": "x"}),
        _row("0", None, None, {"flow.duration_ms_total": 450}),
    ]
    found = report("\n".join(rows))
    (run,) = found.runs
    assert (run.children, run.worker_ms, run.legacy, run.executed) == (1, 450, True, True)
    assert run.complete
    assert any("legacy compatibility data" in line for line in found.lines())


def test_runs_group_by_mode_and_label() -> None:
    first = _trace({"flow.trace_label": "gate"})
    second = [line.replace("inv1", "inv2") for line in _trace()]
    groups = report("\n".join(first + second)).document()["groups"]
    assert [(g["mode"], g["label"], g["runs"]) for g in groups] == [
        ("graph", "gate", 1),
        ("graph", None, 1),
    ]
