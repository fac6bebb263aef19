"""Preset files on disk: the bundled ones load, user and project directories are read by
their layout, and a broken file is a problem beside the others, never a crash."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from adapters.catalogue.preset_files import (
    FilePresetDirectory,
    project_presets_dir,
    user_presets_dir,
)
from domain.agents import AgentSource
from tests.contract._fs_worlds import deadline

GOOD = '---\nname: mine\ndescription: d\noverrides: cwd\n---\n{"agent": "qa", "task": "{task}"}\n'


def test_bundled_user_and_project_presets_load_and_a_broken_file_is_a_problem(
    tmp_path: Path,
) -> None:
    root, cwd = tmp_path / "root", tmp_path / "work"
    Path(user_presets_dir(str(root))).mkdir(parents=True)
    Path(project_presets_dir(str(cwd))).mkdir(parents=True)
    (Path(user_presets_dir(str(root))) / "mine.md").write_text(GOOD)
    (Path(user_presets_dir(str(root))) / "ignored.txt").write_text("not a preset")
    (Path(project_presets_dir(str(cwd))) / "broken.md").write_text("---\nname: x\n")
    catalog = FilePresetDirectory(str(root)).catalog(str(cwd))
    assert [(p.name, p.source) for p in catalog.loaded] == [
        ("code-review", AgentSource.BUNDLED),
        ("map-codebase", AgentSource.BUNDLED),
        ("scout", AgentSource.BUNDLED),
        ("mine", AgentSource.USER),
    ]
    (problem,) = catalog.problems
    assert problem.origin.endswith("broken.md")
    assert problem.source is AgentSource.PROJECT
    assert catalog.problems_in_scope("user") == ()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_project_preset_swapped_for_a_fifo_after_its_stat_is_refused_without_blocking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child can write the project's presets: between the ``stat`` and the ``open`` it can
    put a FIFO there, which an ordinary open would wait on for ever."""
    root, cwd = tmp_path / "root", tmp_path / "work"
    presets = Path(project_presets_dir(str(cwd)))
    presets.mkdir(parents=True)
    swapped = presets / "swapped.md"
    swapped.write_text(GOOD)
    real_stat = os.stat
    done: list[bool] = []

    def stat_then_swap(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        status = real_stat(path, *args, **kwargs)
        if str(path) == str(swapped) and not done:
            done.append(True)
            swapped.unlink()
            os.mkfifo(swapped)
        return status

    monkeypatch.setattr(os, "stat", stat_then_swap)
    with deadline(5):
        catalog = FilePresetDirectory(str(root)).catalog(str(cwd))
    monkeypatch.undo()
    (problem,) = catalog.problems
    assert problem.origin == str(swapped)
    assert problem.reason == "not a regular file"
