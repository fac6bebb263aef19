"""``pi-squad flow`` where no Pi runtime is found: checks that need no Pi answer first (``list``,
a malformed call, a graph cycle); only a call that would start children is
``RUNTIME_UNAVAILABLE`` (it used to be the answer to every call)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dependency_injector import providers

from domain.errors import ErrorCode, SquadOperationError
from entrypoints.cli import main
from tests.integration.flow_cli_support import FlowCli

WHY = "independent verification"
NO_PI = "no usable Pi 0.80.10: nothing found; run `make runtime`"


def no_runtime(**_options: object) -> None:
    raise SquadOperationError(ErrorCode.RUNTIME_UNAVAILABLE, NO_PI)


def flow_without_pi(
    cli: FlowCli, call: object, capsys: pytest.CaptureFixture[str]
) -> tuple[int, dict[str, object]]:
    container = cli.container()
    container.driver.runtime.override(providers.Callable(no_runtime))
    code = main(["flow", "--call", cli.call_file(call), "--cwd", str(cli.cwd), "--json"], container)
    document: dict[str, object] = json.loads(capsys.readouterr().out)
    return code, document


def error_code(document: dict[str, object]) -> object:
    error = document["error"]
    assert isinstance(error, dict)
    return error["code"]


def test_list_is_answered_without_pi(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, document = flow_without_pi(FlowCli(tmp_path), {"list": True}, capsys)
    assert code == 0
    assert document["mode"] == "list"
    assert "agents" in document


def test_a_malformed_call_is_refused_as_malformed_without_pi(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, document = flow_without_pi(FlowCli(tmp_path), {"task": "t", "why": WHY}, capsys)
    assert code == 1
    assert error_code(document) == "INVALID_MODE"  # neither single, chain nor graph


def test_a_graph_cycle_is_refused_as_a_cycle_without_pi(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nodes = [
        {"id": "a", "agent": "researcher", "task": "x", "dependsOn": ["b"]},
        {"id": "b", "agent": "researcher", "task": "y", "dependsOn": ["a"]},
    ]
    call = {"task": "t", "graph": {"nodes": nodes}, "why": WHY}
    code, document = flow_without_pi(FlowCli(tmp_path), call, capsys)
    assert code == 1
    assert error_code(document) == "GRAPH_CYCLE"


def test_a_call_that_would_start_children_says_the_runtime_is_unavailable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    call = {"agent": "researcher", "task": "look", "why": WHY}
    code, document = flow_without_pi(FlowCli(tmp_path), call, capsys)
    assert code == 1
    assert document["error"] == {"code": "RUNTIME_UNAVAILABLE", "message": NO_PI}
