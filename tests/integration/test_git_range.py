"""``GitCommandRange`` on real repositories: it answers what a range needs, in the repository
it is pointed at, whatever ``GIT_*`` variables the caller's environment holds."""

from __future__ import annotations

import os
from pathlib import Path

from adapters.system.git_range import GitCommandRange
from domain.flows.code_review import ChangedFile
from tests.integration.test_flow_code_review import commit, git


def repository(tmp_path: Path) -> Path:
    found = tmp_path / "repo"
    found.mkdir()
    git(found, "init", "-q", "-b", "main")
    return found


def test_it_resolves_refs_merge_bases_and_the_name_status_manifest(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    first = commit(repo, "one", {"a.py": "1\n", "gone.py": "g\n"})
    (repo / "gone.py").unlink()
    second = commit(repo, "two", {"a.py": "2\n", "with space.py": "s\n"})
    reader = GitCommandRange()
    assert reader.commit(str(repo), "HEAD~1") == first
    assert reader.commit(str(repo), "main") == second
    assert reader.merge_base(str(repo), first, second) == first
    assert reader.changed_files(str(repo), first, second) == (
        ChangedFile("M", "a.py"),
        ChangedFile("D", "gone.py"),
        ChangedFile("A", "with space.py"),
    )


def test_what_names_no_commit_answers_none(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    commit(repo, "one", {"a.py": "1\n"})
    reader = GitCommandRange()
    assert reader.commit(str(repo), "no-such-branch") is None
    # Never read as an option: --end-of-options keeps it a revision.
    assert reader.commit(str(repo), "--output=x") is None
    assert not (repo / "x").exists()
    assert reader.commit(str(tmp_path), "HEAD") is None


def test_the_callers_git_variables_cannot_point_it_at_another_repository(
    tmp_path: Path,
) -> None:
    repo = repository(tmp_path)
    mine = commit(repo, "one", {"a.py": "1\n"})
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    theirs = commit(other, "elsewhere", {"b.py": "b\n"})
    environ = {"PATH": os.environ["PATH"], "GIT_DIR": str(other / ".git")}
    assert GitCommandRange(environ=environ).commit(str(repo), "HEAD") == mine != theirs
