"""A published world, the recorder of the background drives its main role starts, and that main
role (tests/integration/main_role/support.py), shut down at teardown."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from application.main_role import MainRole
from tests.integration.main_role.support import RecordingDrive, main_role_over
from tests.integration.ops_support import published
from tests.runtime_world import RuntimeWorld


@pytest.fixture
def world(tmp_path: Path) -> RuntimeWorld:
    return published(tmp_path / "w")


@pytest.fixture
def drive() -> RecordingDrive:
    return RecordingDrive()


@pytest.fixture
def role(world: RuntimeWorld, drive: RecordingDrive) -> Iterator[MainRole]:
    with main_role_over(world, drive) as built:
        yield built
