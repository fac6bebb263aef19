"""The main role's ``delegate`` tool: one discriminated union, offered only with a host."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from dependency_injector import providers

from application.main_role import MainRole
from application.ports import ToolFailure
from entrypoints.main_bridge_container import MainBridgeContainer
from tests.fakes.delegation import DelegationWorld
from tests.unit.application.delegation.support import GRANT, run_request


def build(tmp_path: Path, world: DelegationWorld | None, view_interval: float = 0.0) -> MainRole:
    """The main role the main bridge's container builds, with ``world``'s host if any
    (``view_interval``: its rows' redraw period; 0: redrawn only when asked)."""
    (tmp_path / "project").mkdir(exist_ok=True)
    container = MainBridgeContainer()
    container.environ.override(
        providers.Object({"PI_SQUAD_ROOT": str(tmp_path / "root"), "HOME": str(tmp_path)})
    )
    container.cwd.override(providers.Object(str(tmp_path / "project")))
    extra = {} if world is None else {"delegation": world.host}
    built: MainRole = container.handler(view_interval=view_interval, **extra)
    return built


@pytest.fixture
def world() -> DelegationWorld:
    return DelegationWorld(GRANT)


@pytest.fixture
def role(tmp_path: Path, world: DelegationWorld) -> Iterator[MainRole]:
    built = build(tmp_path, world)
    yield built
    built.session_shutdown()


def test_part_1_does_not_offer_the_tool_without_workers(tmp_path: Path) -> None:
    plain = build(tmp_path, None)
    assert "delegate" not in {t.name for t in plain.registrations().tools}
    plain.session_shutdown()


def test_the_tool_advertises_every_operation(role: MainRole) -> None:
    (tool,) = [t for t in role.registrations().tools if t.name == "delegate"]
    ops = set(tool.parameters["properties"]["op"]["enum"])
    assert ops == {"run", "status", "collect", "follow_up", "resolve", "cancel", "capture"}
    assert tool.parameters["additionalProperties"] is False
    for op in ops:  # the model is told each operation's required fields
        assert f'{{op="{op}"}} needs version, op' in tool.parameters["description"]


def test_a_call_answers_with_the_outcome(role: MainRole, world: DelegationWorld) -> None:
    result = role.execute_tool("t1", "delegate", run_request())
    outcome = json.loads(result.texts[0])
    assert outcome["op"] == "run"
    assert len(world.runtime.starts) == 1


def test_a_refusal_is_a_tool_failure_with_its_code(role: MainRole) -> None:
    with pytest.raises(ToolFailure) as failure:
        role.execute_tool("t1", "delegate", {**run_request(), "jobId": "j-0000000000000001"})
    assert failure.value.message.startswith("DELEGATE_FORGED_FIELD: ")
