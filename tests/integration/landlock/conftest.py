"""A directory tree with one granted directory beside protected ones, for the Landlock tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def world(tmp_path: Path) -> Path:
    """``granted/`` (writable), its siblings ``protected/`` and ``granted-other/`` (not), each
    with a file ``f`` in it, and ``protected/sub/``."""
    for name in ("granted", "protected", "granted-other", "protected/sub"):
        (tmp_path / name).mkdir()
    for name in ("granted/f", "protected/f", "granted-other/f", "protected/sub/f"):
        (tmp_path / name).write_text("original")
    return tmp_path
