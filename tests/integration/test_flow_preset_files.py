"""Preset files on disk: the bundled ones load, user and project directories are read by
their layout, and a broken file is a problem beside the others, never a crash."""

from __future__ import annotations

from pathlib import Path

from adapters.preset_files import FilePresetDirectory, project_presets_dir, user_presets_dir
from domain.agents import AgentSource

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
        ("scout", AgentSource.BUNDLED),
        ("mine", AgentSource.USER),
    ]
    (problem,) = catalog.problems
    assert problem.origin.endswith("broken.md")
    assert problem.source is AgentSource.PROJECT
    assert catalog.problems_in_scope("user") == ()
