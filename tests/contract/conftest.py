"""The file-system world every ``test_fs_*`` contract test runs in, once per world kind.

The other contract modules (child attestation, store) define a ``world`` fixture of their own,
which takes precedence over this one in their module.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.contract._fs_worlds import WORLD_KINDS, World, open_world


@pytest.fixture(params=WORLD_KINDS)
def world(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[World]:
    with open_world(request.param, tmp_path, monkeypatch) as opened:
        yield opened
