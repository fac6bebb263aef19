"""Every flow-engine test runs on its own engine over fakes (``tests/unit/application/flows/
engine.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.application.flows.engine import Engine


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    return Engine(tmp_path)
