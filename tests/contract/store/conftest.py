"""Every ``Store`` contract row runs in each world (``world``); the rows about the file store's
own format run in its two worlds only (``file_world``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.contract.store.world import StoreWorld, build_world
from tests.contract.store_kinds import KINDS


@pytest.fixture(params=KINDS)
def world(request: pytest.FixtureRequest, tmp_path: Path) -> StoreWorld:
    return build_world(request.param, tmp_path)


@pytest.fixture(params=["file-memory", "file-disk"])
def file_world(request: pytest.FixtureRequest, tmp_path: Path) -> StoreWorld:
    return build_world(request.param, tmp_path)
