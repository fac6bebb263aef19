"""Issue 30's delegation rules through the real command line (docs/delegation.md): ``resolve``
refuses evidence the job never had, ``run`` deduplicates only the exact packet. A worker
process is stood in for by a host over the same durable session whose worker runtime is the
fake's (what ``delegate work`` does on real Pi)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers

from application.delegation.host import DelegationHost
from domain.delegation.policy import GrantFlags
from tests.fakes.delegation import FakeWorkerRuntime, outcome
from tests.integration.test_delegate_cli import Cli
from tests.unit.application.delegation.support import (
    CITED_FILE,
    FINDING,
    evidenced_report,
    job,
    run_request,
)


def worker_host(cli: Cli, runtime: FakeWorkerRuntime) -> DelegationHost:
    """A host that starts the session's queued jobs on ``runtime`` and takes their reports."""
    container = cli.container()
    container.delegation.runtime.override(providers.Object(runtime))
    container.delegation.dispatching.override(providers.Object(True))
    grants = container.delegation.grants(
        cwd=str(cli.project), flags=GrantFlags(source_roots=(str(cli.project),))
    )
    host: DelegationHost = container.delegation.host(
        session="default",
        ports=container.delegation.ports(grants=grants),
        cwd=str(cli.project),
        worker_context=False,
    )
    return host


def ready_through_the_cli(
    cli: Cli, capsys: pytest.CaptureFixture[str], *findings: dict[str, Any]
) -> dict[str, Any]:
    """Capture and run on the command line, the job worked to a ready result citing the
    captured file, with ``findings``: the collected item."""
    (cli.project / CITED_FILE).write_text("def get():\n    return cache[key]\n", encoding="utf-8")
    capture = {"version": 1, "op": "capture", "paths": [CITED_FILE]}
    source_id = cli.run(capsys, "capture", request=capture)[1]["sources"][0]["sourceId"]
    admitted = cli.run(capsys, "run", request=run_request(job(sourceIds=[source_id])))[1]
    runtime = FakeWorkerRuntime()
    host = worker_host(cli, runtime)
    host.dispatch()
    lease = runtime.lease(admitted["jobs"][0]["jobId"])
    host.report(lease, outcome(evidenced_report(source_id, *findings)))
    collect = {"version": 1, "op": "collect", "batchId": admitted["batchId"]}
    item: dict[str, Any] = cli.run(capsys, "collect", request=collect)[1]["items"][0]
    return item


def acceptance(item: dict[str, Any], *cited: str) -> dict[str, Any]:
    """``resolve`` accepting ``item``, its finding f1 confirmed citing ``cited``."""
    identity = item["receipt"]["identity"]
    fields = ("batchId", "jobId", "attemptId", "packetDigest", "resultRevision", "taskGeneration")
    decision = {"findingId": "f1", "decision": "confirmed", "reason": "read it"}
    return {
        "version": 1,
        "op": "resolve",
        **{name: identity[name] for name in fields},
        "idempotencyKey": "-".join(("r", *cited)),
        "disposition": "accept",
        "findings": [{**decision, "evidenceIds": list(cited)}],
    }


def test_resolve_refuses_an_evidence_id_the_job_never_had(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = Cli(tmp_path)
    item = ready_through_the_cli(cli, capsys, FINDING)
    assert item["receipt"]["hostStatus"] == "ready"
    code, refused = cli.run(capsys, "resolve", request=acceptance(item, "e1", "e404"))
    assert code == 1
    assert refused["error"]["code"] == "DELEGATE_EVIDENCE_UNKNOWN"
    assert "e404" in refused["error"]["message"]
    code, accepted = cli.run(capsys, "resolve", request=acceptance(item, "e1"))
    assert code == 0
    assert accepted["state"] == "accepted"


def test_a_run_with_another_objective_starts_a_new_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = Cli(tmp_path)
    code, first = cli.run(capsys, "run", request=run_request())
    assert code == 0
    code, again = cli.run(capsys, "run", request=run_request())
    assert again["jobs"][0]["deduplicated"] is True  # the exact packet: the same job
    assert again["jobs"][0]["jobId"] == first["jobs"][0]["jobId"]
    other = run_request(objective="find the regression in the cache")
    code, changed = cli.run(capsys, "run", request=other)
    assert code == 0
    assert changed["jobs"][0]["deduplicated"] is False
    assert changed["jobs"][0]["jobId"] != first["jobs"][0]["jobId"]
    code, status = cli.run(capsys, "status")
    assert status["ledger"]["reserved"] == 8  # both jobs hold their reservations


def test_an_accepted_result_goes_stale_after_its_source_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = Cli(tmp_path)
    item = ready_through_the_cli(cli, capsys, FINDING)
    code, accepted = cli.run(capsys, "resolve", request=acceptance(item, "e1"))
    assert accepted["state"] == "accepted"
    batch = {"version": 1, "op": "status", "batchId": accepted["batchId"]}
    assert cli.run(capsys, "status", request=batch)[1]["jobs"][0]["state"] == "accepted"
    (cli.project / CITED_FILE).write_text("def get():\n    return None\n", encoding="utf-8")
    code, status = cli.run(capsys, "status", request=batch)
    assert code == 0
    assert status["jobs"][0]["state"] == "stale"
    collect = {"version": 1, "op": "collect", "batchId": accepted["batchId"]}
    receipt = cli.run(capsys, "collect", request=collect)[1]["items"][0]["receipt"]
    assert receipt["hostStatus"] == "stale"
    assert "source changed" in receipt["reason"]


def test_status_on_the_command_line_gives_a_failed_jobs_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = Cli(tmp_path)
    admitted = cli.run(capsys, "run", request=run_request())[1]
    runtime = FakeWorkerRuntime()
    host = worker_host(cli, runtime)
    host.dispatch()
    lease = runtime.lease(admitted["jobs"][0]["jobId"])
    host.report(lease, outcome(b"", stop_reason="error", error_message="400 bad request"))
    code, status = cli.run(capsys, "status")
    assert code == 0
    [row] = status["batches"][0]["jobs"]
    assert row["state"] == "failed"
    assert "400 bad request" in row["reason"]
