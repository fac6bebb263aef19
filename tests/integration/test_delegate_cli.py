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
        self,
        capsys: pytest.CaptureFixture[str],
        *argv: str,
        request: Any = None,
        grant: tuple[str, ...] | None = None,
    ) -> tuple[int, dict[str, Any]]:
        """One call; ``grant`` is its grant flags (by default the project as a granted root)."""
        flags = ["--grant-root", str(self.project)] if grant is None else list(grant)
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
                *flags,
            ],
            self.container(),
        )
        lines = capsys.readouterr().out.splitlines()
        assert len(lines) == 1, "stdout is exactly one JSON object"
        document: dict[str, Any] = json.loads(lines[0])
        return code, document

    def state_bytes(self) -> bytes:
        return (
            self.base / "root" / "delegation" / "sessions" / "default" / "state.json"
        ).read_bytes()


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


def queued_run(cli: Cli, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """A run admitted and queued under the project grant (this process runs no workers)."""
    (cli.project / "a.py").write_text("a = 1\n", encoding="utf-8")
    _, captured = cli.run(
        capsys, "capture", request={"version": 1, "op": "capture", "paths": ["a.py"]}
    )
    source = captured["sources"][0]["sourceId"]
    code, admitted = cli.run(capsys, "run", request=run_request(job(sourceIds=[source])))
    assert code == 0
    return admitted


def test_status_without_the_grant_flags_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 30: a read-only `status` from another terminal without the flags cancelled the
    session's work and renewed its allowance. Now it is answered from the state, unwritten."""
    cli = Cli(tmp_path)
    admitted = queued_run(cli, capsys)
    before = cli.state_bytes()
    code, status = cli.run(capsys, "status", grant=())
    assert code == 0
    assert status["policyGeneration"] == 1
    assert status["ledger"]["renewals"] == []
    assert status["batches"][0]["jobs"][0]["state"] == "queued"
    batch = {"version": 1, "op": "collect", "batchId": admitted["batchId"], "afterCursor": 0}
    code, collected = cli.run(capsys, "collect", request=batch, grant=("--allowance", "3"))
    assert code == 0
    assert collected["pending"] == [admitted["jobs"][0]["jobId"]]
    assert cli.state_bytes() == before


def test_a_run_under_other_flags_is_refused_and_only_renew_adopts_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = Cli(tmp_path)
    admitted = queued_run(cli, capsys)
    wider = ("--grant-root", str(cli.project), "--allowance", "5")
    before = cli.state_bytes()
    code, refused = cli.run(capsys, "run", request=run_request(job("k2")), grant=wider)
    assert code == 1
    assert refused["error"]["code"] == "DELEGATE_GRANT_CHANGED"
    assert "policy generation 1" in refused["error"]["message"]
    assert "allowanceRequests 5" in refused["error"]["message"]
    assert "`pi-squad delegate renew --session default`" in refused["error"]["message"]
    assert cli.state_bytes() == before
    code, renewed = cli.run(capsys, "renew", grant=wider)
    assert code == 0
    assert renewed["op"] == "renew"
    assert renewed["policyGeneration"] == 2
    assert renewed["ledger"]["free"] == 5
    assert renewed["ledger"]["renewals"] == [{"policyGeneration": 2, "consumedBefore": 0}]
    # The queued job's grant was revoked by the renewal.
    assert renewed["batches"][0]["jobs"][0]["state"] == "cancelled"
    code, again = cli.run(capsys, "run", request=run_request(job("k2")), grant=wider)
    assert code == 0
    assert again["batchId"] != admitted["batchId"]
    # The old flags are another grant now.
    code, old = cli.run(
        capsys, "cancel", request={"version": 1, "op": "cancel", "batchId": again["batchId"]}
    )
    assert old["error"]["code"] == "DELEGATE_GRANT_CHANGED"


def test_renew_takes_no_request(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cli = Cli(tmp_path)
    code, document = cli.run(capsys, "renew", request={"version": 1, "op": "status"})
    assert code == 1
    assert document["error"]["code"] == "DELEGATE_INVALID"


class NoPiWorkers:
    """Stands in for the Pi worker runtime: records what ``delegate work`` asked of it."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.stopped = False

    def bind(self, host: object) -> None:
        self.host = host

    def start(self, start: object) -> None:
        raise AssertionError("no worker may start under another grant")

    def stop_all(self) -> None:
        self.stopped = True


def test_work_under_other_flags_is_refused_before_any_worker_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = Cli(tmp_path)
    queued_run(cli, capsys)
    before = cli.state_bytes()
    workers = NoPiWorkers()
    container = cli.container()
    container.delegation.worker_runtime.override(providers.Object(workers))
    argv = ["delegate", "work", "--json", "--cwd", str(cli.project), "--allowance", "9"]
    code = main(argv, container)
    document = json.loads(capsys.readouterr().out)
    assert code == 1
    assert document["error"]["code"] == "DELEGATE_GRANT_CHANGED"
    assert workers.stopped
    assert cli.state_bytes() == before
