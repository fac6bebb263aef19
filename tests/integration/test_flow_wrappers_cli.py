"""``checkpoint`` and ``reflexion`` through ``pi-squad flow`` with the bundled pi-flows agents
and the scripted fake child runtime: the command line has nobody to ask, so a checkpoint is
refused before any spawn; reflexion's lessons carry from one call to the next."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.integration.flow_cli_support import FlowCli

WHY = "independent verification"
LOOP = {"task": "Fix the parser.", "loop": {"body": {"agent": "operator"}, "maxIterations": 1}}


@pytest.fixture
def cli(tmp_path: Path) -> FlowCli:
    return FlowCli(tmp_path)


def flow(cli: FlowCli, capsys: pytest.CaptureFixture[str], call: dict[str, Any]) -> Any:
    status = cli.run("--call", cli.call_file({**call, "why": WHY}), "--json", "--model", "p/m")
    return status, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("before", ["spawn", "finalize"])
def test_a_checkpoint_on_the_command_line_is_refused_before_any_spawn(
    cli: FlowCli, capsys: pytest.CaptureFixture[str], before: str
) -> None:
    status, document = flow(cli, capsys, {**LOOP, "checkpoint": {"before": before}})
    assert status == 1
    error = document["error"]
    assert (error["code"], error["path"]) == ("CHECKPOINT_APPROVAL_REQUIRED", "$.checkpoint.before")
    assert "Pi with a UI" in error["fix"]
    assert error["retryable"] is False
    assert cli.scripted.runtime.spawned == []


def test_reflexion_lessons_carry_from_one_call_to_the_next(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    call = {**LOOP, "reflexion": {"enabled": True}}
    first_status, first = flow(cli, capsys, call)
    assert first_status == 1  # no LOOP: DONE in one iteration
    lessons = cli.cwd / ".pi" / "flow-reflections.jsonl"
    (record,) = [json.loads(line) for line in lessons.read_text().splitlines()]
    assert record["flowId"] == first["flowId"]
    assert "loop (operator) LOOP_DID_NOT_CONVERGE" in record["lesson"]
    assert stat.S_IMODE(os.stat(lessons).st_mode) == 0o600
    _status, second = flow(cli, capsys, call)
    assert second["reflexion"] == {
        "file": ".pi/flow-reflections.jsonl",
        "lessonsGiven": 1,
        "lessonRecorded": True,
    }
    body = cli.scripted.runtime.spawned[-1].request.first_prompt
    assert "LOOP_DID_NOT_CONVERGE" in body
    assert len(lessons.read_text().splitlines()) == 2
