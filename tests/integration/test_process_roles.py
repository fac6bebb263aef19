"""Every process role is built by the one factory of ``entrypoints.roles``: the bridge's process
(``bridge_root``, no container) and the containers tests override build the same role, and an
overridden provider is the only difference."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dependency_injector import providers

from application.child.role import SpecChildRole
from application.child.worker import FAILED_CLOSED_REASON, REQUEST_LIMIT_REASON, WorkerRole
from application.ports import PiEvents
from domain.child_environment import (
    DelegationWorkerChild,
    broker_socket_environ,
    delegation_worker_environ,
)
from entrypoints.bridge_container import BridgeContainer
from entrypoints.bridge_root import system_bridge_role
from entrypoints.concerns.delegation import Delegation
from entrypoints.concerns.driver import Driver
from entrypoints.main_bridge_container import MainBridgeContainer
from entrypoints.roles import ROLES
from tests.squads import child_environment, multi_chunk_spec, publish_on_disk

BROKER = "/nonexistent-root/delegation/brokers/0123456789abcdef.sock"
WORKER = DelegationWorkerChild("s1", "b-1", "j-1", "a-1", "tok", "d" * 64, BROKER)


def worker_environ(root: Path) -> dict[str, str]:
    root.mkdir(parents=True, exist_ok=True)
    return {
        **delegation_worker_environ(WORKER),
        **broker_socket_environ(BROKER),
        "PI_SQUAD_ROOT": str(root),
    }


def container_over(environ: dict[str, str]) -> BridgeContainer:
    container = BridgeContainer()
    container.environ.override(providers.Object(environ))
    return container


class RefusingBroker:
    """A broker client that admits nothing, made for the workers it records."""

    def __init__(self) -> None:
        self.workers: list[DelegationWorkerChild] = []

    def __call__(self, worker: DelegationWorkerChild) -> RefusingBroker:
        self.workers.append(worker)
        return self

    def admit_request(self) -> bool:
        return False

    def admit_tool(self, tool: str) -> tuple[bool, str]:
        return False, "refused"


def built_alike(environ: dict[str, str], name: str, events: type) -> tuple[PiEvents, PiEvents]:
    """The role the bridge's process builds in ``environ``, and the container's: the same."""
    served = system_bridge_role("child", environ)
    contained = container_over(environ).bridge_role()
    assert (served.name, contained.name) == (name, name)
    assert (type(served.events), type(contained.events)) == (events, events)
    assert contained.events.registrations() == served.events.registrations()
    return served.events, contained.events


def test_the_container_builds_the_delegated_workers_role_the_process_builds(
    tmp_path: Path,
) -> None:
    roles = built_alike(worker_environ(tmp_path / "root"), "child-worker", WorkerRole)
    # Both ask the host's broker at the socket their environment names (nobody listens
    # there) and so both fail closed alike; a stand-in would not.
    decisions = [events.tool_call("c1", "read_source", {}) for events in roles]
    assert decisions[0] == decisions[1]
    assert decisions[0].reason == FAILED_CLOSED_REASON


def test_an_overridden_broker_client_is_the_only_difference_in_a_workers_role(
    tmp_path: Path,
) -> None:
    broker = RefusingBroker()
    container = container_over(worker_environ(tmp_path / "root"))
    container.worker_broker.override(providers.Callable(broker))
    role = container.bridge_role()
    decision = role.events.tool_call("c1", "read_source", {})
    assert decision.block
    assert decision.reason == REQUEST_LIMIT_REASON
    assert broker.workers == [WORKER]


def test_the_container_and_the_process_build_a_spec_childs_role_alike(tmp_path: Path) -> None:
    published = publish_on_disk(tmp_path, multi_chunk_spec(2))
    environ = dict(child_environment(published, "build"))
    served, contained = built_alike(environ, "child-spec", SpecChildRole)
    assert served.before_agent_start() == contained.before_agent_start()


def test_the_containers_wrap_the_factories_of_the_roles_table() -> None:
    wrapped: dict[str, Any] = {
        "child-bridge": BridgeContainer.child_events,
        "main-bridge": MainBridgeContainer.bridge_role,
        "driver": Driver.background_drive,
        "delegation-workers": Delegation.workers,
    }
    for name, provider in wrapped.items():
        assert provider.provides is ROLES[name], name
    # A worker's broker is reached through the child factory, whichever root calls it.
    assert set(ROLES) == {*wrapped, "delegation-worker-bridge"}
