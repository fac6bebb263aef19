"""Flow traces through the real OpenTelemetry exporter and the real command line: the JSON-lines
file a flow writes, ``pi-squad trace report`` reading it back, and the read-back catching a span
lost after a successful write."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from adapters.tracing.otel import OtelTraceSinks
from application.ports import TraceUnwritable
from domain.flows.trace_report import report
from entrypoints.cli import main
from tests.fakes.flows import answer
from tests.integration.flow_cli_support import FlowCli
from tests.unit.application.flows.envelopes import envelope, fenced
from tests.unit.domain.flows.test_contracts import contract

WHY = "independent verification"
READ_ONLY = "read,grep,find,ls"


class Cli(FlowCli):
    """The flow command line with ``--json``, and ``pi-squad trace report``."""

    def __init__(self, base: Path, environ: dict[str, str] | None = None) -> None:
        super().__init__(base, settings=environ)

    def flow(self, document: dict[str, Any]) -> int:
        path = self.base / "call.json"
        path.write_text(json.dumps(document), encoding="utf-8")
        argv = ["flow", "--call", str(path), "--cwd", str(self.cwd), "--json"]
        return main(argv, self.container())

    def trace_report(self, *argv: str) -> int:
        return main(["trace", "report", *argv], self.container())


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def _graph(trace: str, **extra: Any) -> dict[str, Any]:
    nodes = [
        {"id": "a", "agent": "researcher", "task": "A", "tools": READ_ONLY},
        {"id": "b", "agent": "researcher", "task": "B", "dependsOn": ["a"], "tools": READ_ONLY},
        {"id": "c", "agent": "researcher", "task": "C", "dependsOn": ["a"], "tools": READ_ONLY},
    ]
    return {"task": "g", "graph": {"nodes": nodes}, "why": WHY, "traceFile": trace, **extra}


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_flow_writes_one_json_span_per_line_that_reads_back_as_a_complete_tree(
    cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.flow(_graph("trace.jsonl", traceLabel="gate")) == 0
    document = json.loads(capsys.readouterr().out)
    path = cli.cwd / "trace.jsonl"
    assert oct(path.stat().st_mode & 0o777) == oct(0o600)
    rows = _rows(path)
    roles = [row["attributes"]["flow.span_role"] for row in rows]
    assert sorted(roles) == sorted(
        ["root", "stage", "stage", "child", "child", "child", "event", "event"]
    )
    assert roles[-1] == "root"  # written last: it declares what the trace should hold
    root = rows[-1]
    assert root["parent_id"] is None
    assert root["attributes"]["flow.trace.expected_spans"] == 8
    assert root["attributes"]["flow.trace.health"] == "recorded"
    assert root["attributes"]["openinference.span.kind"] == "CHAIN"
    ids = {row["context"]["span_id"] for row in rows}
    assert all(row["parent_id"] in ids for row in rows if row is not root)
    child_b = next(r for r in rows if r["attributes"].get("flow.unit_key") == "node-b")
    child_a = next(r for r in rows if r["attributes"].get("flow.unit_key") == "node-a")
    # b links through the handoff event of a's output into b, which links to a.
    (through,) = [link["context"]["span_id"] for link in child_b["links"]]
    handoff = next(r for r in rows if r["context"]["span_id"] == through)
    assert handoff["name"] == "handoff.accepted"
    assert handoff["attributes"]["flow.unit_key"] == "node-a.handoff"
    assert child_b["attributes"]["flow.depends_on"] == "node-a.handoff"
    assert [link["context"]["span_id"] for link in handoff["links"]] == [
        child_a["context"]["span_id"]
    ]
    assert child_b["parent_id"] != child_a["context"]["span_id"]
    assert document["trace"]["spans"]["health"] == "recorded"
    assert document["trace"]["rootSpanId"] == root["context"]["span_id"].removeprefix("0x")
    found = report(path.read_text(encoding="utf-8"))
    assert found.complete
    (group,) = found.document()["groups"]
    assert (group["mode"], group["label"], group["runs"]) == ("graph", "gate", 1)
    assert group["verifiedOutcomeSuccess"] is None


def test_read_back_detects_a_span_deleted_after_a_successful_write(
    cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.flow(_graph("trace.jsonl")) == 0
    path = cli.cwd / "trace.jsonl"
    assert cli.trace_report(str(path), "--strict", "--json") == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["complete"] is True
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    child = next(i for i, line in enumerate(lines) if '"node-c"' in line)
    path.write_text("".join(lines[:child] + lines[child + 1 :]), encoding="utf-8")
    assert cli.trace_report(str(path), "--strict", "--json") == 1
    document = json.loads(capsys.readouterr().out)
    assert document["complete"] is False
    assert document["groups"][0]["health"]["dropped"] == 1
    assert document["incomplete"][0]["problems"] == ["1 spans dropped"]
    # Without --strict the report is still made (exit 0), and says so in words.
    assert cli.trace_report(str(path)) == 0
    assert "evidence: INCOMPLETE" in capsys.readouterr().out


def test_a_deleted_stage_leaves_children_without_a_parent(cli: Cli) -> None:
    assert cli.flow(_graph("trace.jsonl")) == 0
    path = cli.cwd / "trace.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    stage = next(i for i, line in enumerate(lines) if '"wave-2"' in line and '"stage"' in line)
    path.write_text("".join(lines[:stage] + lines[stage + 1 :]), encoding="utf-8")
    (run,) = report(path.read_text(encoding="utf-8")).incomplete
    assert "2 spans whose parent is missing (not a span tree)" in run.problems


def test_strict_refuses_an_unwritable_trace_path_and_spawns_nothing(
    cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    call = {"agent": "researcher", "task": "t", "why": WHY, "traceFile": "no/such/dir/t.jsonl"}
    assert cli.flow({**call, "traceStrict": True}) == 1
    error = json.loads(capsys.readouterr().out)["error"]
    assert (error["code"], error["path"]) == ("TRACE_INCOMPLETE", "$.traceFile")
    assert cli.scripted.runtime.spawned == []
    # Best effort without strict: the flow completes and its health says the trace is missing.
    cli.scripted.scripts["single"] = answer("ok")
    assert cli.flow(call) == 0
    trace = json.loads(capsys.readouterr().out)["trace"]
    assert trace["spans"]["health"] == "missing"
    assert trace["spans"]["failedExports"] == trace["spans"]["expected"] == 3


def test_the_environment_names_the_trace_file_and_asks_for_strictness(tmp_path: Path) -> None:
    cli = Cli(tmp_path, {"PI_FLOWS_TRACE_FILE": "env.jsonl", "PI_FLOWS_TRACE_STRICT": "1"})
    assert cli.flow({"agent": "researcher", "task": "t", "why": WHY}) == 0
    assert report((cli.cwd / "env.jsonl").read_text(encoding="utf-8")).complete


def test_two_flows_append_to_one_file_and_report_by_mode_and_label(
    cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    cli.flow({"agent": "researcher", "task": "t", "why": WHY, "traceFile": "t.jsonl"})
    cli.scripted.scripts["single"] = lambda child: child.exit(1)
    cli.flow(
        {"agent": "researcher", "task": "t", "why": WHY, "traceFile": "t.jsonl", "traceLabel": "x"}
    )
    capsys.readouterr()
    assert cli.trace_report(str(cli.cwd / "t.jsonl"), "--json", "--strict") == 0
    groups = json.loads(capsys.readouterr().out)["groups"]
    assert [(g["mode"], g["label"], g["executionSuccess"]) for g in groups] == [
        ("single", None, {"succeeded": 1, "total": 1}),
        ("single", "x", {"succeeded": 0, "total": 1}),
    ]


def test_a_symlink_at_the_trace_path_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    target = tmp_path / "victim"
    target.write_text("keep\n", encoding="utf-8")
    link = tmp_path / "trace.jsonl"
    link.symlink_to(target)
    with pytest.raises(TraceUnwritable, match="symbolic link"):
        OtelTraceSinks().open(str(link))
    assert target.read_text(encoding="utf-8") == "keep\n"
    os.mkfifo(tmp_path / "fifo")
    reader = os.open(tmp_path / "fifo", os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(TraceUnwritable, match="not a regular file"):
            OtelTraceSinks().open(str(tmp_path / "fifo"))
    finally:
        os.close(reader)


def test_an_unreadable_report_file_is_trace_incomplete(
    cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.trace_report(str(cli.base / "missing.jsonl"), "--json") == 1
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "TRACE_INCOMPLETE"


def test_a_trace_inside_the_squad_root_is_refused_however_it_is_spelled(
    cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    cli.root.mkdir()
    (cli.cwd / "records").symlink_to(cli.root)
    for path in (str(cli.root / "t.jsonl"), "records/t.jsonl"):
        call = {"agent": "researcher", "task": "t", "why": WHY, "traceFile": path}
        assert cli.flow({**call, "traceStrict": True}) == 1
        error = json.loads(capsys.readouterr().out)["error"]
        assert error["code"] == "TRACE_INCOMPLETE"
        assert "inside the squad root" in error["message"]
    assert not (cli.root / "t.jsonl").exists()


def test_handoff_validation_and_artifact_events_read_back_as_complete_evidence(
    cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    """A contracted chain whose step hands on a typed envelope with an artifact, then a
    terminal report: the file holds handoff, validation and artifact events, the root's counts
    balance, and ``trace report --strict`` passes."""
    (cli.cwd / "report.txt").write_bytes(b"findings\n")
    body = envelope(artifactReferences=[{"path": "report.txt"}])
    cli.scripted.scripts["step-1"] = answer(fenced(body))
    cli.scripted.scripts["step-2"] = answer(fenced(envelope()))
    steps = [
        {"agent": "researcher", "task": "a", "tools": READ_ONLY},
        {"agent": "researcher", "task": "b {previous}", "tools": READ_ONLY},
    ]
    call = {"task": "g", "chain": steps, "contract": contract(), "why": WHY}
    assert cli.flow({**call, "traceFile": "t.jsonl", "traceStrict": True}) == 0
    capsys.readouterr()
    path = cli.cwd / "t.jsonl"
    rows = _rows(path)
    names = [row["name"] for row in rows if row["attributes"]["flow.span_role"] == "event"]
    assert names == [
        "handoff.accepted",
        "artifact.referenced",
        "envelope.validated",
    ]
    root = rows[-1]["attributes"]
    assert root["flow.trace.expected_spans"] == root["flow.trace.observed_spans"] == len(rows)
    assert cli.trace_report(str(path), "--strict", "--json") == 0
    document = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert document["complete"] is True
    assert document["groups"][0]["topology"]["events"] == 3
