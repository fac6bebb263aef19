"""Durable flow runs through the real command line: the record a ``pi-squad flow`` call leaves
under the squad root (whole, owner-only), ``flow status`` and ``flow list`` in text and JSON,
the coded refusal of an unknown id, and a ``pi-squad flow`` process killed with SIGKILL shown
``interrupted`` with the command that re-runs it."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from adapters.store.flow_runs import RECORD_FILE, RUNS_DIR
from tests.fakes.flows import answer
from tests.integration.flow_cli_support import FlowCli, kill, started_kill_host

WHY = "independent verification"
CHAIN = {
    "task": "g",
    "chain": [{"agent": "researcher", "task": "a"}, {"agent": "reviewer", "task": "b"}],
    "why": WHY,
}


@pytest.fixture
def cli(tmp_path: Path) -> FlowCli:
    return FlowCli(tmp_path)


def _json(capsys: pytest.CaptureFixture[str]) -> Any:
    return json.loads(capsys.readouterr().out)


def _flow(cli: FlowCli, capsys: pytest.CaptureFixture[str], call: dict[str, Any]) -> str:
    """Run ``call`` with ``--json``; its flow id."""
    assert cli.run("--call", cli.call_file(call), "--json", "--model", "p/m") in (0, 1)
    flow_id: str = _json(capsys)["flowId"]
    return flow_id


def test_a_flow_leaves_a_whole_owner_only_record_and_its_call(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    flow_id = _flow(cli, capsys, CHAIN)
    directory = cli.root / RUNS_DIR / flow_id
    assert directory.stat().st_mode & 0o777 == 0o700
    for name in (RECORD_FILE, "call.json"):
        assert (directory / name).stat().st_mode & 0o777 == 0o600
    assert json.loads((directory / "call.json").read_text(encoding="utf-8")) == CHAIN
    stored = json.loads((directory / RECORD_FILE).read_text(encoding="utf-8"))
    assert (stored["runId"], stored["mode"], stored["status"]) == (flow_id, "chain", "completed")
    # Nothing but the record and the call: every write replaced the file whole.
    assert sorted(p.name for p in directory.iterdir()) == ["call.json", RECORD_FILE]


def test_flow_status_json_shows_the_newest_run_and_its_runs(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    cli.scripted.scripts["step-2"] = lambda child: child.exit(1, "x")
    _flow(cli, capsys, {**CHAIN, "chain": [*CHAIN["chain"], {"agent": "qa", "task": "c"}]})
    flow_id = _flow(cli, capsys, {**CHAIN, "why": "again"})
    assert cli.run("status", "--json") == 0
    document = _json(capsys)
    assert document["runId"] == flow_id
    assert document["status"] == "failed"
    assert [(r["key"], r["status"], r["errorCode"]) for r in document["runs"]] == [
        ("step-1", "completed", None),
        ("step-2", "failed", "CHILD_EXIT_NONZERO"),
    ]
    assert document["error"]["code"] == "CHILD_EXIT_NONZERO"
    assert document["callDigest"].startswith("sha256:")
    assert document["driver"]["alive"] is None  # ended: its process is not asked about
    assert document["next"]["action"] == "re-run"
    assert document["next"]["command"].startswith("pi-squad flow --call ")
    assert f"--cwd {cli.cwd}" in document["next"]["command"]


def test_flow_list_shows_every_run_newest_first_in_text_and_json(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    older = _flow(cli, capsys, CHAIN)
    newer = _flow(cli, capsys, {"agent": "researcher", "task": "t", "why": WHY})
    assert cli.run("list", "--json") == 0
    document = _json(capsys)
    assert [(r["runId"], r["mode"]) for r in document["runs"]] == [
        (newer, "single"),
        (older, "chain"),
    ]
    assert document["unreadable"] == []
    assert cli.run("list") == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[:3] for line in lines] == [
        [newer, "single", "completed"],
        [older, "chain", "completed"],
    ]
    assert lines[1].endswith("2/2 runs settled")


def test_flow_status_text_and_a_unique_prefix(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    flow_id = _flow(cli, capsys, CHAIN)
    assert cli.run("status", flow_id[:6]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"flow run {flow_id} (chain): completed"
    assert any(line.split()[:3] == ["step-2", "reviewer", "completed"] for line in lines)
    assert not any(line.lstrip().startswith("re-run:") for line in lines)


def test_an_unknown_id_is_refused_naming_it_and_flow_list(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    _flow(cli, capsys, CHAIN)
    assert cli.run("status", "abcdef", "--json") == 1
    error = _json(capsys)["error"]
    assert error["code"] == "FLOW_RUN_NOT_FOUND"
    assert "'abcdef'" in error["message"]
    assert "`pi-squad flow list`" in error["message"]
    assert cli.run("status", "abcdef") == 1
    assert "pi-squad flow list" in capsys.readouterr().err


def test_the_run_commands_and_a_call_are_kept_apart(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (("list", "--call", "x.json"), ("list", "abc"), (), ("abc",)):
        with pytest.raises(SystemExit) as exited:
            cli.run(*argv)
        assert exited.value.code == 2, argv
    # ``{"list": true}`` is a call (the agents and presets in scope), not ``flow list``.
    assert cli.run("--call", cli.call_file({"list": True}), "--json") == 0
    assert "agents" in _json(capsys)
    assert not (cli.root / RUNS_DIR).exists()  # it spawned nothing: no record


def _record(root: Path) -> dict[str, Any] | None:
    runs = root / RUNS_DIR
    for path in runs.glob(f"*/{RECORD_FILE}") if runs.exists() else ():
        found: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return found
    return None


def test_a_killed_flow_process_is_shown_interrupted_with_its_re_run_command(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    call = cli.call_file(CHAIN)
    process = started_kill_host("tests.integration.flow_kill_host", cli, call)
    try:
        deadline = time.monotonic() + 10
        record = _record(cli.root)
        while (record is None or len(record["runs"]) < 2) and time.monotonic() < deadline:
            time.sleep(0.05)
            record = _record(cli.root)
        assert record is not None
        assert record["status"] == "running"
        assert cli.run("status", "--json") == 0
        assert _json(capsys)["status"] == "running"  # its process is alive
    finally:
        kill(process)
    assert cli.run("status", "--json") == 0
    document = _json(capsys)
    assert document["status"] == "interrupted"
    assert document["driver"]["pid"] == process.pid
    assert document["driver"]["alive"] is False
    assert [(r["key"], r["status"]) for r in document["runs"]] == [
        ("step-1", "completed"),
        ("step-2", "running"),
    ]
    assert document["endedAt"] is None
    command = document["next"]["command"]
    assert document["next"]["action"] == "re-run"
    # The command re-runs the call that was saved with the record, and it runs.
    saved = command.split("--call ")[1].split()[0]
    assert json.loads(Path(saved).read_text(encoding="utf-8")) == CHAIN
    cli.scripted.scripts["step-2"] = answer("second")
    assert cli.run("--call", saved, "--json") == 0
    assert _json(capsys)["status"] == "completed"
    assert cli.run("list") == 0
    statuses = sorted(line.split()[2] for line in capsys.readouterr().out.splitlines())
    assert statuses == ["completed", "interrupted"]
