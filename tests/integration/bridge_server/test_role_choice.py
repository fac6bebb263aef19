"""Which role a bridge serves: the requested role and the environment must agree, and the container
builds and replaces it."""

from __future__ import annotations

from pathlib import Path

import pytest
from dependency_injector import providers

from adapters.bridge import BridgeRole, bridge_role_for, main_bridge_role
from application.child.role import FailedClosedRole, InertRole, SpecChildRole
from application.ports import PiEvents
from domain.child_environment import FailedClosedChild, LegacyChild, MainProcess, ProcessRole
from entrypoints.bridge_container import BridgeContainer
from tests.integration.bridge_server.support import ScriptedEvents
from tests.squads import child_environment, multi_chunk_spec, publish_on_disk


def _choose(requested: str, process_role: ProcessRole) -> BridgeRole:
    def child_events(role: ProcessRole) -> PiEvents:
        return FailedClosedRole(role) if isinstance(role, FailedClosedChild) else InertRole()

    return bridge_role_for(
        requested,  # type: ignore[arg-type]
        process_role,
        main_role=lambda: BridgeRole(name="main", events=InertRole()),
        child_events=child_events,
    )


@pytest.mark.parametrize(
    ("requested", "process_role", "name", "lifecycle"),
    [
        ("main", MainProcess(), "main", True),
        ("child", LegacyChild(), "child-legacy", False),
        ("child", FailedClosedChild("partial"), "child-failed-closed", True),
        ("main", FailedClosedChild("partial"), "child-failed-closed", True),
        ("main", LegacyChild(), "child-failed-closed", True),
        ("child", MainProcess(), "child-failed-closed", True),
    ],
)
def test_the_requested_role_and_the_environment_must_agree(
    requested: str, process_role: ProcessRole, name: str, lifecycle: bool
) -> None:
    role = _choose(requested, process_role)
    assert role.name == name
    assert role.lifecycle is lifecycle
    if name == "child-failed-closed":
        decision = role.events.tool_call("c", "read", {})
        assert decision.block


def test_the_container_builds_a_spec_child_from_the_environment(tmp_path: Path) -> None:
    published = publish_on_disk(tmp_path, multi_chunk_spec(2))
    container = BridgeContainer()
    container.environ.override(providers.Object(dict(child_environment(published, "build"))))
    container.requested_role.override(providers.Object("child"))
    role = container.bridge_role()
    assert role.name == "child-spec"
    assert isinstance(role.events, SpecChildRole)
    assert role.events.registrations().guard


def test_the_main_role_is_replaceable_in_the_container(events: ScriptedEvents) -> None:
    container = BridgeContainer()
    container.environ.override(providers.Object({}))
    container.requested_role.override(providers.Object("main"))
    default = container.bridge_role().events.registrations()
    assert next(tool.name for tool in default.tools) == "squad"
    assert not default.guard
    container.main_role.override(providers.Factory(main_bridge_role, events))
    role = container.bridge_role()
    assert role.events is events
    assert role.notifications is events
    assert role.on_shutdown is not None
