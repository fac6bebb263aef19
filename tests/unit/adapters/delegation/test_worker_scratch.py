"""A delegated worker's private directory on the real system: named after this process (so the
next worker's start sweeps it if this driver dies mid-job) and removed, with everything in it,
when the worker ends."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from adapters.delegation.workers import WorkerScratch
from domain.child_environment import WORKER_DIR_PREFIX


def test_a_worker_directory_names_its_owner_and_is_removed_at_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with WorkerScratch().temporary_dir(WORKER_DIR_PREFIX) as directory:
        made = Path(directory)
        assert made.parent == tmp_path
        assert made.name.startswith(f"{WORKER_DIR_PREFIX}{os.getpid()}.")
        (made / "agent").mkdir()
        (made / "agent" / "auth.json").write_text("{}")
    assert not made.exists()
