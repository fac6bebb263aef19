"""Trace and root span ids derived from ``traceContext`` and the mode, through the real
OpenTelemetry exporter and command line: an evaluation that runs the same case again writes
the same ids, so the two traces correlate; without a context the ids are random."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from domain.flows.call import TraceContext
from domain.flows.trace_identity import derived_ids
from domain.flows.trace_report import report
from tests.integration.flow_cli_support import FlowCli

WHY = "independent verification"
CONTEXT = {"runId": "eval-1", "caseId": "case-9", "trialId": "trial-1", "trialIndex": 0}


def _roots(cli: FlowCli, call: dict[str, Any], times: int) -> list[dict[str, Any]]:
    """Run ``call`` ``times`` times, each appending to ``trace.jsonl``; every row of it."""
    for _ in range(times):
        assert cli.run("--call", cli.call_file(call), "--json") == 0
    text = (cli.cwd / "trace.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def _ids(row: dict[str, Any]) -> tuple[str, str]:
    context = row["context"]
    return context["trace_id"].removeprefix("0x"), context["span_id"].removeprefix("0x")


def test_a_rerun_with_the_same_trace_context_writes_the_same_trace_and_root_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = FlowCli(tmp_path)
    call = {
        "agent": "researcher",
        "task": "t",
        "why": WHY,
        "traceFile": "trace.jsonl",
        "traceContext": CONTEXT,
    }
    rows = _roots(cli, call, times=2)
    capsys.readouterr()
    roots = [row for row in rows if row["attributes"]["flow.span_role"] == "root"]
    expected = derived_ids(
        TraceContext(run_id="eval-1", case_id="case-9", trial_id="trial-1", trial_index=0),
        "single",
    )
    assert [_ids(root) for root in roots] == [expected, expected]
    # Every span of both runs is in that one trace; the two runs stay apart on read-back.
    assert {_ids(row)[0] for row in rows} == {expected[0] if expected else ""}
    found = report("\n".join(json.dumps(row) for row in rows))
    assert found.complete
    assert len({run.invocation_id for run in found.runs}) == 2


def test_without_a_trace_context_each_run_has_its_own_random_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = FlowCli(tmp_path)
    call = {"agent": "researcher", "task": "t", "why": WHY, "traceFile": "trace.jsonl"}
    rows = _roots(cli, call, times=2)
    capsys.readouterr()
    roots = [row for row in rows if row["attributes"]["flow.span_role"] == "root"]
    assert len({_ids(root)[0] for root in roots}) == 2
