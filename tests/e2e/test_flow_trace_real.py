"""A traced flow over real Pi 0.80.10 children (the scripted model): the trace file it writes
reads back complete, with real usage on its child spans. Skipped without the project runtime."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapters.pi_runtime import PiRuntime
from adapters.scripted_model.models_json import MODEL_ID
from adapters.scripted_model.policies import ECHO_PREFIX
from domain.flows.trace_report import report
from tests.e2e.flow_runs import WHY, run_flow

pytestmark = pytest.mark.realpi


def test_a_strict_traced_chain_over_real_children_reads_back_complete(
    tmp_path: Path, runtime: PiRuntime
) -> None:
    steps = [{"agent": "researcher", "task": "say TRACE-A"}, {"agent": "researcher", "task": "b"}]
    call = {
        "task": "g",
        "chain": steps,
        "why": WHY,
        "traceFile": "trace.jsonl",
        "traceStrict": True,
        "traceLabel": "e2e",
    }
    status, document = run_flow(tmp_path, call)
    assert status == 0, document
    assert document["trace"]["spans"]["health"] == "recorded"
    path = tmp_path / "project" / "trace.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    children = [r for r in rows if r["attributes"]["flow.span_role"] == "child"]
    assert [c["attributes"]["flow.unit_key"] for c in children] == ["step-1", "step-2"]
    for child in children:
        assert child["attributes"]["llm.model_name"] == MODEL_ID
        assert child["attributes"]["llm.token_count.total"] > 0
        assert str(child["attributes"]["output.value"]).startswith(ECHO_PREFIX)
        assert child["attributes"]["flow.duration_ms"] > 0
    # Step 1's answer crossed as a legacy-prose envelope; step 2 links through that boundary.
    (handoff,) = [r for r in rows if r["attributes"]["flow.span_role"] == "event"]
    assert handoff["name"] == "handoff.accepted"
    assert handoff["attributes"]["flow.handoff.compatibility"] == "legacy-prose"
    assert handoff["attributes"]["flow.handoff.acceptance"] == "accepted"
    assert children[1]["attributes"]["flow.depends_on"] == "step-1.handoff"
    assert [link["context"]["span_id"] for link in children[1]["links"]] == [
        handoff["context"]["span_id"]
    ]
    found = report(path.read_text(encoding="utf-8"))
    assert found.complete
    (group,) = found.document()["groups"]
    assert (group["mode"], group["label"], group["children"]) == (
        "chain",
        "e2e",
        {"completed": 2, "total": 2},
    )
