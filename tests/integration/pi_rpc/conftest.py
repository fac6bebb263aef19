"""The ``world`` of the ``adapters.pi_rpc`` tests; every child it started is killed at teardown."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.pi_rpc.support import World


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    world = World(tmp_path)
    yield world
    for handle in world.started:
        handle.kill()
