"""A published world on the real file system (``world``, in place of the parametrized one) and the
sandbox the command runs in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.cli_support import Sandbox
from tests.integration.ops_support import published
from tests.runtime_world import RuntimeWorld


@pytest.fixture
def world(tmp_path: Path) -> RuntimeWorld:
    return published(tmp_path / "w")


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return Sandbox.create(tmp_path / "cli")
