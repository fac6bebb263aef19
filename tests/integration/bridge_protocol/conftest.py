"""A published squad, a starter of bridge processes over it (each stopped at teardown), and a spec
child's bridge."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from application.squads.create_squad import PublishedSquad
from tests.integration.bridge_protocol.support import SPEC, TASK, BridgeProcess, StartBridge
from tests.squads import child_environment, publish_on_disk


@pytest.fixture
def published(tmp_path: Path) -> PublishedSquad:
    return publish_on_disk(tmp_path, SPEC)


@pytest.fixture
def start_bridge() -> Iterator[StartBridge]:
    """Starts bridge subprocesses; those still running when the test ends are killed."""
    started: list[BridgeProcess] = []

    def start(environment: Mapping[str, str], role: str = "child") -> BridgeProcess:
        bridge = BridgeProcess(environment, role)
        started.append(bridge)
        return bridge

    yield start
    for bridge in started:
        if bridge.process.poll() is None:
            bridge.process.kill()
            bridge.process.wait()


@pytest.fixture
def child(published: PublishedSquad, start_bridge: StartBridge) -> BridgeProcess:
    return start_bridge(child_environment(published, TASK))
