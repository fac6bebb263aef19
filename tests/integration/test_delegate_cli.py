"""``pi-squad delegate`` through the real command line and container (docs/delegation.md):
one JSON object with ``--json``, refusals exit 1 with ``{"error": {"code", "message"}}``."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers

from entrypoints.cli import main
from entrypoints.container import CliContainer
from tests.unit.application.delegation.support import job, run_request


class Cli:
    def __init__(self, base: Path, environ: dict[str, str] | None = None) -> None:
        self.base = base
        self.project = base / "project"
        self.project.mkdir(parents=True, exist_ok=True)
        self.environ = {"PI_SQUAD_ROOT": str(base / "root"), "HOME": str(base), **(environ or {})}

    def container(self) -> CliContainer:
        container = CliContainer()
        container.environ.override(providers.Object(self.environ))
        return container

    def run(
        self, capsys: pytest.CaptureFixture[str], *argv: str, request: Any = None
    ) -> tuple[int, dict[str, Any]]:
        extra: list[str] = []
        if request is not None:
            path = self.base / "request.json"
            path.write_text(json.dumps(request), encoding="utf-8")
            extra = ["--request", str(path)]
        code = main(
            [
                "delegate",
                *argv,
                *extra,
                "--json",
                "--cwd",
                str(self.project),
                "--grant-root",
                str(self.project),
            ],
            self.container(),
        )
        lines = capsys.readouterr().out.splitlines()
        assert len(lines) == 1, "stdout is exactly one JSON object"
        document: dict[str, Any] = json.loads(lines[0])
        return code, document


def test_capture_run_status_collect_cancel(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = Cli(tmp_path)
    (cli.project / "a.py").write_text("a = 1\n", encoding="utf-8")
    code, captured = cli.run(
        capsys, "capture", request={"version": 1, "op": "capture", "paths": ["a.py"]}
    )
    assert code == 0
    source = captured["sources"][0]["sourceId"]
    code, admitted = cli.run(capsys, "run", request=run_request(job(sourceIds=[source])))
    assert code == 0
    batch = admitted["batchId"]
    # This process runs no workers: the job waits, queued, for one that does (part 2).
    code, status = cli.run(
        capsys, "status", request={"version": 1, "op": "status", "batchId": batch}
    )
    assert status["jobs"][0]["state"] == "queued"
    code, collected = cli.run(
        capsys, "collect", request={"version": 1, "op": "collect", "batchId": batch}
    )
    assert collected["items"] == []
    assert collected["pending"] == [admitted["jobs"][0]["jobId"]]
    code, cancelled = cli.run(
        capsys, "cancel", request={"version": 1, "op": "cancel", "batchId": batch}
    )
    assert cancelled["cancelled"] == [admitted["jobs"][0]["jobId"]]
    assert cancelled["stillSettling"] == []
    code, session = cli.run(capsys, "status")
    assert session["ledger"]["reserved"] == 0


def test_refusals_exit_1_with_a_coded_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = Cli(tmp_path)
    cases = [
        ("run", {**run_request(), "version": 2}, "DELEGATE_VERSION_UNSUPPORTED"),
        ("run", {**run_request(), "packetDigest": "0" * 64}, "DELEGATE_FORGED_FIELD"),
        ("run", {**run_request(), "extra": True}, "DELEGATE_INVALID"),
        ("collect", run_request(), "DELEGATE_INVALID"),  # the op must be the subcommand's
        (
            "status",
            {"version": 1, "op": "status", "batchId": "b-00000000000000000000000000000001"},
            "DELEGATE_NOT_FOUND",
        ),
    ]
    for operation, request, expected in cases:
        code, document = cli.run(capsys, operation, request=request)
        assert code == 1
        assert document["error"]["code"] == expected
        assert set(document["error"]) == {"code", "message"}


def test_a_delegated_worker_cannot_delegate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = Cli(tmp_path, {"PI_SQUAD_DELEGATION_WORKER": "1"})
    code, document = cli.run(capsys, "run", request=run_request())
    assert code == 1
    assert document["error"]["code"] == "DELEGATE_POLICY_DENIED"


def test_the_request_can_come_from_stdin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cli = Cli(tmp_path)
    data = json.dumps(run_request()).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code = main(
        ["delegate", "run", "--request", "-", "--json", "--session", "other"], cli.container()
    )
    assert code == 0
    assert json.loads(capsys.readouterr().out)["jobs"][0]["deduplicated"] is False


def test_a_bad_policy_file_refuses_every_operation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = Cli(tmp_path)
    policy = tmp_path / "root" / "delegation" / "policy.json"
    policy.parent.mkdir(parents=True)
    policy.write_text('{"version": 1, "modes": ["everything"]}', encoding="utf-8")
    code, document = cli.run(capsys, "status")
    assert code == 1
    assert document["error"]["code"] == "DELEGATE_POLICY_INVALID"
