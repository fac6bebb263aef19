"""The file-system world every ``test_fs_*`` contract test runs in, once per world kind.

The child attestation and store suites (``child_attestation/``, ``store/``) define a ``world``
fixture of their own in their ``conftest.py``, which takes precedence over this one there.
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
