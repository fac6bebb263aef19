"""``dossier`` and ``monitor`` through the flow engine on fakes: each probe runs in the flow's
directory, a cancelled flow stops waiting between probes at once, and the decisions the modes
took are trace events naming their unit."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import attrs
import pytest

from application.flows.flow_report import FlowReport
from application.flows.flow_tool import planned_runs
from application.flows.trace_setup import TraceDefaults
from domain.flows.mode_parts import CheckOutcome
from tests.fakes.flows import READ_ONLY, FakeAgentDirectory, FakeCheckRun, agent
from tests.fakes.tracing import FakeSpan, FakeTraceSinks
from tests.unit.application.flows.engine import WHY, Engine

AGENTS = FakeAgentDirectory(
    bundled=(agent("recon", tools=READ_ONLY), agent("analyst"), agent("debrief"))
)


def engine(base: Path, check: Any = None) -> tuple[Engine, FakeTraceSinks]:
    sinks = FakeTraceSinks()
    built = Engine(base, AGENTS, trace_sinks=sinks, trace_defaults=TraceDefaults(), checks=check)
    return built, sinks


def events(sinks: FakeTraceSinks, prefix: str) -> list[FakeSpan]:
    return [e for e in sinks.last.by_role("event") if e.name.startswith(prefix)]


def test_a_probe_runs_in_the_calls_directory_and_its_decisions_are_trace_events(
    tmp_path: Path,
) -> None:
    check = FakeCheckRun([CheckOutcome(1, "down"), CheckOutcome(1, "down"), CheckOutcome(0)])
    flows, sinks = engine(tmp_path, check)
    (flows.cwd / "svc").mkdir()
    monitor = {"command": "curl -sf localhost:8080", "intervalMs": 10}
    report = flows.run(
        {"task": "t", "cwd": "svc", "monitor": monitor, "why": WHY, "traceFile": "t.jsonl"}
    )
    assert report.document()["status"] == "completed"
    assert {cwd for _command, cwd, _timeout in check.calls} == {str(flows.cwd / "svc")}
    found = events(sinks, "monitor.")
    assert [(e.name, e.attributes["flow.unit_key"]) for e in found] == [
        ("monitor.probe", "probe-1"),
        ("monitor.probe", "probe-2"),
        ("monitor.triggered", "probe-3"),
    ]
    assert found[-1].attributes["flow.control.value"] == "success on check 3/6"
    assert all(e.attributes["flow.event_kind"] == "state" for e in found)


def test_a_dossiers_section_tally_is_a_trace_event(tmp_path: Path) -> None:
    flows, sinks = engine(tmp_path)
    sections = [{"agent": "recon", "task": "a"}, {"agent": "recon", "task": "b"}]
    flows.run({"task": "t", "dossier": {"sections": sections}, "why": WHY, "traceFile": "t.jsonl"})
    (tally,) = events(sinks, "dossier.")
    assert (tally.attributes["flow.unit_key"], tally.attributes["flow.control.value"]) == (
        "debrief",
        "2/2 succeeded",
    )
    assert flows.scripted.order() == ["section-1", "section-2", "debrief"]


@attrs.define
class PressesCtrlC:
    """A probe during which the person presses Ctrl+C (the runner is cancelled)."""

    flows: Engine | None = None
    calls: int = 0

    def __call__(self, command: str, cwd: str, timeout_ms: int) -> CheckOutcome:
        self.calls += 1
        assert self.flows is not None
        self.flows.runner.cancel()
        return CheckOutcome(1)


def test_a_cancelled_flow_stops_waiting_between_probes_at_once(tmp_path: Path) -> None:
    probe = PressesCtrlC()
    flows, _sinks = engine(tmp_path, probe)
    probe.flows = flows
    done = threading.Event()
    reports: list[FlowReport] = []

    def run() -> None:
        # A minute's wait after the first probe: the cancellation must end it at once.
        monitor = {"command": "false", "intervalMs": 60_000}
        reports.append(flows.run({"task": "t", "monitor": monitor, "why": WHY}))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(10)
    assert probe.calls == 1
    assert reports[0].document()["status"] == "cancelled"
    assert flows.scripted.runtime.spawned == []


@pytest.mark.parametrize(
    ("params", "runs"),
    [
        ({"dossier": {"sections": [{"agent": "recon", "task": "a"}] * 3}}, 4),
        # The probes are not runs: the live row counts the one reactor.
        ({"monitor": {"command": "true", "maxChecks": 20}}, 1),
    ],
)
def test_the_live_row_plans_every_section_and_the_debrief_or_the_one_reactor(
    params: dict[str, Any], runs: int
) -> None:
    assert planned_runs({"task": "t", **params}) == runs
