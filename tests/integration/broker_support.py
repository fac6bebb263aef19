"""The squad roots the broker's socket tests run under."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT_KINDS = ["short", "long"]


@contextlib.contextmanager
def squad_root(kind: str, tmp_path: Path) -> Iterator[Path]:
    """``short``: a squad root whose broker sockets' paths fit a socket address (as
    ``$HOME/.pi/squad`` does); ``long``: one too long for it (over 107 bytes: reached through
    its directory's descriptor)."""
    if kind == "long":
        yield tmp_path / ("d" * 100) / "root"
        return
    path = Path(tempfile.mkdtemp(prefix="pi-squad-b-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
