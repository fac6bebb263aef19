"""``worktree`` against real git repositories (scripted children write real files): two
writers integrated cleanly, a conflict reported with its paths or resolved by the integrator,
the integrator's review of the whole integration (its fix committed, its failure keeping
everything), a dirty source refused, a failed check keeping everything, and the user's
checkout (its branch, HEAD, index and files) never changed."""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers

from adapters.system.check_command import ShellCheck
from adapters.system.git_worktrees import SubprocessGitWorktrees
from application.flows.flow_report import FlowReport
from application.flows.worktree_flow import WorktreeFlow
from entrypoints.container import CliContainer
from tests.fakes.child_runtime import FakeChild
from tests.fakes.clock import SequentialIds
from tests.fakes.flows import FakeAgentDirectory, agent
from tests.fakes.git_worktrees import FakeGitWorktrees
from tests.integration.flow_cli_support import FlowCli, run_call
from tests.unit.application.flows.engine import WHY, Engine

RUN = "000000000000"
INTEGRATION = f"pi-flow/{RUN}/integration"


def git(cwd: Path, *args: str) -> str:
    identity = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    done = subprocess.run(
        ["git", *identity, *args], cwd=cwd, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


class Repo:
    """A flow engine whose directory is a git repository with one commit on ``main``."""

    def __init__(self, base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        # Scratch worktrees go under the test's directory (still outside the checkout).
        self.scratch = base / "scratch"
        self.scratch.mkdir()
        monkeypatch.setattr(tempfile, "tempdir", str(self.scratch))
        flows = WorktreeFlow(SubprocessGitWorktrees(), ShellCheck(), SequentialIds())
        agents = FakeAgentDirectory(bundled=(agent("operator"),))
        self.engine = Engine(base, agents, checks=ShellCheck(), worktrees=flows)
        self.path = self.engine.cwd
        git(self.path, "init", "--quiet", "--initial-branch=main")
        (self.path / "README").write_text("line one\nline two\n")
        (self.path / "app.py").write_text("print('hi')\n")
        git(self.path, "add", "--all")
        git(self.path, "commit", "--quiet", "-m", "initial")

    def writes(self, key: str, files: dict[str, str], answer: str = "done") -> None:
        def script(child: FakeChild) -> None:
            for name, content in files.items():
                Path(child.request.cwd, name).write_text(content)
            child.say(answer)
            child.settle()

        self.engine.scripted.scripts[key] = script

    def run(self, **worktree: Any) -> FlowReport:
        tasks = [
            {"id": "api", "agent": "operator", "task": "the API"},
            {"id": "docs", "agent": "operator", "task": "the docs"},
        ]
        call = {"task": "ship", "why": WHY, "worktree": {"tasks": tasks, **worktree}}
        return self.engine.run(call)

    def state(self) -> tuple[str, ...]:
        """What the person's checkout is: its branch, HEAD, index, status and files."""
        return (
            git(self.path, "symbolic-ref", "HEAD"),
            git(self.path, "rev-parse", "HEAD"),
            git(self.path, "ls-files", "--stage"),
            git(self.path, "status", "--porcelain", "--untracked-files=all"),
            (self.path / "README").read_text(),
            (self.path / "app.py").read_text(),
        )

    def branches(self) -> set[str]:
        return set(git(self.path, "branch", "--format=%(refname:short)").splitlines())

    def worktrees(self) -> list[str]:
        listed = git(self.path, "worktree", "list", "--porcelain").splitlines()
        return [line.removeprefix("worktree ") for line in listed if line.startswith("worktree ")]

    def show(self, ref: str, path: str) -> str:
        return git(self.path, "show", f"{ref}:{path}")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    return Repo(tmp_path, monkeypatch)


def failure(report: FlowReport) -> dict[str, Any]:
    document = report.document()
    assert document["status"] == "failed"
    return dict(document["results"][-1]["error"])


def test_two_writers_are_integrated_and_only_the_integration_branch_is_left(repo: Repo) -> None:
    before = repo.state()
    repo.writes("writer-api", {"api.py": "def search(): ...\n"})
    repo.writes("writer-docs", {"README": "line one\nline two\nsearch docs\n"})
    document = repo.run(checkCommand="test -f api.py && grep -q 'search docs' README").document()
    assert document["status"] == "completed", document["summary"]
    assert repo.show(INTEGRATION, "api.py") == "def search(): ..."
    assert repo.show(INTEGRATION, "README").endswith("search docs")
    log = git(repo.path, "log", "--format=%s", INTEGRATION).splitlines()
    assert f"pi-flow {RUN}: task api (operator)" in log
    assert f"pi-flow {RUN}: integrate task docs" in log
    assert repo.branches() == {"main", INTEGRATION}
    assert repo.worktrees() == [str(repo.path)]
    assert list(repo.scratch.iterdir()) == []
    assert repo.state() == before


def test_each_writer_ran_in_its_own_worktree_outside_the_checkout(repo: Repo) -> None:
    repo.writes("writer-api", {"a.txt": "a\n"})
    repo.writes("writer-docs", {"b.txt": "b\n"})
    repo.run()
    spawned = repo.engine.scripted.runtime.spawned
    cwds = [Path(c.request.cwd) for c in spawned if c.task_id.startswith("writer-")]
    assert len(set(cwds)) == 2
    assert all(repo.scratch in cwd.parents and repo.path not in cwd.parents for cwd in cwds)


def test_a_conflict_is_reported_with_its_paths_and_everything_is_kept(repo: Repo) -> None:
    before = repo.state()
    repo.writes("writer-api", {"README": "line one\napi\n"})
    repo.writes("writer-docs", {"README": "line one\ndocs\n"})

    def gives_up(child: FakeChild) -> None:
        child.say("I could not resolve it")
        child.settle()

    repo.engine.scripted.scripts["integrator-1"] = gives_up
    error = failure(repo.run())
    assert error["code"] == "WORKTREE_INTEGRATION_FAILED"
    assert "left conflicts unresolved in README" in error["message"]
    assert f"pi-flow/{RUN}/api" in repo.branches()
    assert f"pi-flow/{RUN}/docs" in repo.branches()
    assert INTEGRATION in repo.branches()
    assert len(repo.worktrees()) == 4
    # Nothing merged silently: the integration branch has only the clean first merge.
    (integration,) = repo.scratch.glob("*/integration")
    assert "<<<<<<<" in (integration / "README").read_text()
    assert repo.show(INTEGRATION, "README") == "line one\napi"
    assert repo.state() == before


def test_the_integrator_resolves_a_conflict_in_the_integration_worktree(repo: Repo) -> None:
    repo.writes("writer-api", {"README": "line one\napi\n"}, answer="README: api line")
    repo.writes("writer-docs", {"README": "line one\ndocs\n"}, answer="README: docs line")

    def resolves(child: FakeChild) -> None:
        Path(child.request.cwd, "README").write_text("line one\napi\ndocs\n")
        # Marked resolved, as the integrator is told; the parent commits the merge.
        git(Path(child.request.cwd), "add", "README")
        child.say("merged both lines")
        child.settle()

    repo.engine.scripted.scripts["integrator-1"] = resolves
    document = repo.run().document()
    assert document["status"] == "completed", document["summary"]
    # The review runs after the resolution too, given both writers' reports.
    assert "README: docs line" in repo.engine.prompts["integrator-review"]
    assert "README: api line" in repo.engine.prompts["integrator-1"]
    assert "README: docs line" in repo.engine.prompts["integrator-1"]
    assert repo.show(INTEGRATION, "README") == "line one\napi\ndocs"
    assert git(repo.path, "merge-base", "--is-ancestor", f"{INTEGRATION}^2", INTEGRATION) == ""
    assert repo.branches() == {"main", INTEGRATION}


def test_the_review_after_clean_merges_has_its_fix_committed_before_the_check(
    repo: Repo,
) -> None:
    before = repo.state()
    repo.writes("writer-api", {"api.py": "def serch(): ...\n"}, answer="added serch")
    repo.writes("writer-docs", {"docs.md": "call search()\n"}, answer="documented search")

    repo.writes("integrator-review", {"api.py": "def search(): ...\n"}, answer="renamed it")
    document = repo.run(checkCommand="grep -q 'def search' api.py").document()
    assert document["status"] == "completed", document["summary"]
    prompt = repo.engine.prompts["integrator-review"]
    assert "added serch" in prompt
    assert "documented search" in prompt
    assert repo.show(INTEGRATION, "api.py") == "def search(): ..."
    log = git(repo.path, "log", "--format=%s", INTEGRATION).splitlines()
    assert log[0] == f"pi-flow {RUN}: integrator review"
    assert repo.branches() == {"main", INTEGRATION}
    assert repo.state() == before


def test_a_failed_review_keeps_everything_and_commits_none_of_it(repo: Repo) -> None:
    before = repo.state()
    repo.writes("writer-api", {"a.txt": "a\n"})
    repo.writes("writer-docs", {"b.txt": "b\n"})

    def gives_up(child: FakeChild) -> None:
        Path(child.request.cwd, "a.txt").write_text("half-fixed\n")
        child.exit(1)

    repo.engine.scripted.scripts["integrator-review"] = gives_up
    error = failure(repo.run(checkCommand="exit 0"))
    assert error["code"] == "WORKTREE_INTEGRATION_FAILED"
    assert f"review of {INTEGRATION} failed" in error["message"]
    assert len(repo.worktrees()) == 4
    assert {f"pi-flow/{RUN}/api", f"pi-flow/{RUN}/docs", INTEGRATION} <= repo.branches()
    assert repo.show(INTEGRATION, "a.txt") == "a"
    assert repo.state() == before


def test_a_review_leaving_conflict_markers_is_not_committed(repo: Repo) -> None:
    repo.writes("writer-api", {"a.txt": "a\n"})
    repo.writes("writer-docs", {"b.txt": "b\n"})

    marked = "<<<<<<< HEAD\na\n=======\nA\n>>>>>>> x\n"
    repo.writes("integrator-review", {"a.txt": marked}, answer="reviewed")
    error = failure(repo.run())
    assert error["code"] == "WORKTREE_INTEGRATION_FAILED"
    assert "left conflict markers or unmerged paths in a.txt" in error["message"]
    assert repo.show(INTEGRATION, "a.txt") == "a"


def test_a_resolution_left_unstaged_is_not_taken_as_resolved(repo: Repo) -> None:
    repo.writes("writer-api", {"README": "line one\napi\n"})
    repo.writes("writer-docs", {"README": "line one\ndocs\n"})

    # Edited only: never staged with `git add`.
    repo.writes("integrator-1", {"README": "line one\napi\ndocs\n"}, answer="edited")
    error = failure(repo.run())
    assert error["code"] == "WORKTREE_INTEGRATION_FAILED"
    assert "unresolved in README" in error["message"]


def test_the_repositorys_hooks_never_run(repo: Repo) -> None:
    marker = repo.path.parent / "hook-ran"
    for hook in ("pre-commit", "post-checkout", "post-merge", "commit-msg"):
        script = repo.path / ".git" / "hooks" / hook
        script.write_text(f"#!/bin/sh\necho {hook} >> {marker}\nexit 1\n")
        script.chmod(0o755)
    repo.writes("writer-api", {"a.txt": "a\n"})
    repo.writes("writer-docs", {"b.txt": "b\n"})
    document = repo.run().document()
    assert document["status"] == "completed", document["summary"]
    assert not marker.exists()


def test_a_dirty_source_is_refused_and_left_as_it_was(repo: Repo) -> None:
    (repo.path / "app.py").write_text("print('unsaved')\n")
    (repo.path / "notes.txt").write_text("scratch\n")
    before = repo.state()
    error = failure(repo.run())
    assert error["code"] == "WORKTREE_DIRTY_SOURCE"
    assert "app.py, notes.txt" in error["message"]
    assert repo.engine.scripted.runtime.spawned == []
    assert repo.branches() == {"main"}
    assert repo.state() == before


def test_a_directory_outside_any_repository_is_not_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    flows = WorktreeFlow(SubprocessGitWorktrees(), ShellCheck(), SequentialIds())
    engine = Engine(tmp_path, FakeAgentDirectory(bundled=(agent("operator"),)), worktrees=flows)
    tasks = [{"id": i, "agent": "operator", "task": i} for i in ("a", "b")]
    report = engine.run({"task": "t", "why": WHY, "worktree": {"tasks": tasks}})
    assert failure(report)["code"] == "WORKTREE_NOT_GIT"


def test_a_failed_check_keeps_the_integration_worktree_and_says_where(repo: Repo) -> None:
    repo.writes("writer-api", {"a.txt": "a\n"})
    repo.writes("writer-docs", {"b.txt": "b\n"})
    error = failure(repo.run(checkCommand="echo checking; exit 3"))
    assert error["code"] == "WORKTREE_VERIFY_FAILED"
    assert "exit 3" in error["message"]
    assert "checking" in error["message"]
    assert str(repo.scratch) in error["message"]
    assert len(repo.worktrees()) == 4
    assert {f"pi-flow/{RUN}/api", f"pi-flow/{RUN}/docs", INTEGRATION} <= repo.branches()


def test_pi_squad_flow_runs_a_worktree_call_on_the_containers_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    cli = FlowCli(tmp_path)
    git(cli.cwd, "init", "--quiet", "--initial-branch=main")
    (cli.cwd / "README").write_text("hello\n")
    git(cli.cwd, "add", "--all")
    git(cli.cwd, "commit", "--quiet", "-m", "initial")
    for key, name in (("writer-api", "api.py"), ("writer-docs", "docs.md")):
        cli.scripted.scripts[key] = writing(name)
    tasks = [
        {"id": "api", "agent": "operator", "task": "api"},
        {"id": "docs", "agent": "operator", "task": "docs"},
    ]
    status, document = run_call(cli, capsys, {"task": "ship", "worktree": {"tasks": tasks}}, WHY)
    assert (status, document["status"]) == (0, "completed"), document["summary"]
    (branch,) = [
        b for b in git(cli.cwd, "branch", "--format=%(refname:short)").split() if b != "main"
    ]
    assert re.fullmatch(r"pi-flow/[0-9a-f]{12}/integration", branch)
    assert git(cli.cwd, "ls-tree", "--name-only", branch).split() == ["README", "api.py", "docs.md"]


def test_the_containers_git_is_a_provider_a_test_overrides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = FakeGitWorktrees(toplevel_of={})

    class Overridden(FlowCli):
        def container(self) -> CliContainer:
            container = super().container()
            container.adapters.flow_git_worktrees.override(providers.Object(fake))
            return container

    cli = Overridden(tmp_path)
    tasks = [{"id": i, "agent": "operator", "task": i} for i in ("a", "b")]
    status, document = run_call(cli, capsys, {"task": "t", "worktree": {"tasks": tasks}}, WHY)
    assert status == 1
    assert document["results"][-1]["error"]["code"] == "WORKTREE_NOT_GIT"
    assert fake.calls == [("toplevel", str(cli.cwd))]


def writing(name: str) -> Any:
    def script(child: FakeChild) -> None:
        Path(child.request.cwd, name).write_text(f"{name}\n")
        child.say("done")
        child.settle()

    return script
