"""``worktree`` through the flow engine on fakes (a recording git, scripted children): what is
made where, what each writer and the integrator are told, every code, and what is removed or
kept. The same rules against real git repositories: tests/integration/test_flow_worktree_git.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from application.flows.flow_tool import planned_runs
from domain.flows.call import FlowCall, parse_call
from domain.flows.errors import FlowError
from domain.flows.mode_parts import CheckOutcome
from domain.flows.tools import ToolChoice
from domain.flows.write_guard import WriterRole, check_shared_writes
from tests.fakes.child_runtime import FakeChild
from tests.fakes.flows import handed
from tests.fakes.git_worktrees import FakeGitWorktrees
from tests.unit.application.flows.engine import Engine
from tests.unit.application.flows.worktree_support import (
    AGENTS,
    RUN,
    SCRATCH,
    TASKS,
    Flow,
    call,
    error_of,
)


def test_each_writer_works_in_its_own_worktree_and_the_branches_are_integrated(
    tmp_path: Path,
) -> None:
    flow = Flow(tmp_path)
    flow.both_write(("api.py", "def search(): ...\n"), ("README", "hello\nsearch docs\n"))
    report = flow.run(call())
    document = report.document()
    assert document["status"] == "completed", document["summary"]
    assert flow.called("add_worktree") == [
        ("add_worktree", "/repo", f"{SCRATCH}/api", f"pi-flow/{RUN}/api", "c0"),
        ("add_worktree", "/repo", f"{SCRATCH}/docs", f"pi-flow/{RUN}/docs", "c0"),
        ("add_worktree", "/repo", f"{SCRATCH}/integration", f"pi-flow/{RUN}/integration", "c0"),
    ]
    assert flow.cwds == {
        "writer-api": f"{SCRATCH}/api",
        "writer-docs": f"{SCRATCH}/docs",
        "integrator-review": f"{SCRATCH}/integration",
    }
    messages = [c[2] for c in flow.called("commit_all")]
    assert [m.splitlines()[0] for m in messages] == [
        f"pi-flow {RUN}: task api (operator)",
        f"pi-flow {RUN}: task docs (operator)",
    ]
    assert flow.git.tree_of(f"pi-flow/{RUN}/integration") == {
        "README": "hello\nsearch docs\n",
        "api.py": "def search(): ...\n",
    }
    assert f"integrated into pi-flow/{RUN}/integration and reviewed" in document["summary"]
    # No conflict integrator: the merges were clean; the review runs all the same.
    keys = [r["key"] for r in document["results"]]
    assert keys == ["writer-api", "writer-docs", "integrator-review"]


def test_a_writer_is_told_its_task_its_directory_and_to_leave_committing_to_the_parent(
    tmp_path: Path,
) -> None:
    flow = Flow(tmp_path)
    flow.both_write(("api.py", "x"), ("docs.md", "y"))
    flow.run(call())
    prompt = flow.engine.prompts["writer-api"]
    assert "add the endpoint for search" in prompt
    assert "own git worktree" in prompt
    assert "do not commit" in prompt


def test_success_removes_the_writers_worktrees_and_branches_and_keeps_the_integration_branch(
    tmp_path: Path,
) -> None:
    flow = Flow(tmp_path)
    flow.both_write(("api.py", "x"), ("docs.md", "y"))
    flow.run(call())
    assert [c[2] for c in flow.called("remove_worktree")] == [
        f"{SCRATCH}/api",
        f"{SCRATCH}/docs",
        f"{SCRATCH}/integration",
    ]
    assert set(flow.git.branches) == {"main", f"pi-flow/{RUN}/integration"}
    assert flow.git.removed_dirs == [SCRATCH]


def test_a_conflict_goes_to_the_integrator_with_both_sides_envelopes(tmp_path: Path) -> None:
    flow = Flow(tmp_path)
    flow.writes("writer-api", "README", "api's line\n", answer="changed README for the API")
    flow.writes("writer-docs", "README", "docs' line\n", answer="changed README for docs")

    def integrate(child: FakeChild) -> None:
        flow.git.resolve_conflict(child.request.cwd, "README", "api's line\ndocs' line\n")
        child.say("resolved")
        child.settle()

    flow.engine.scripted.scripts["integrator-1"] = integrate
    document = flow.run(call()).document()
    assert document["status"] == "completed", document["summary"]
    assert flow.cwds["integrator-1"] == f"{SCRATCH}/integration"
    prompt = flow.engine.prompts["integrator-1"]
    assert "- README" in prompt
    sides = handed(prompt)
    assert [envelope["summary"] for envelope in sides.values()] == [
        "changed README for the API",
        "changed README for docs",
    ]
    assert flow.git.tree_of(f"pi-flow/{RUN}/integration")["README"] == ("api's line\ndocs' line\n")
    assert [d["handoff"]["compatibility"] for d in document["results"][:2]] == [
        "legacy-prose",
        "legacy-prose",
    ]


def test_a_conflict_the_integrator_leaves_is_reported_with_its_paths_and_everything_kept(
    tmp_path: Path,
) -> None:
    flow = Flow(tmp_path)
    flow.both_write(("README", "api\n"), ("README", "docs\n"))
    report = flow.run(call())
    error = error_of(report)
    assert error["code"] == "WORKTREE_INTEGRATION_FAILED"
    assert "left conflicts unresolved in README" in error["message"]
    assert f"worktrees under {SCRATCH}" in error["message"]
    assert flow.called("remove_worktree") == flow.called("delete_branch") == []
    assert not flow.called("conclude")


def test_a_dirty_source_checkout_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    flow = Flow(tmp_path, FakeGitWorktrees(source_dirty=("notes.txt", "src/app.py")))
    error = error_of(flow.run(call()))
    assert error["code"] == "WORKTREE_DIRTY_SOURCE"
    assert "notes.txt, src/app.py" in error["message"]
    assert flow.called("add_worktree") == []
    assert flow.engine.scripted.runtime.spawned == []


def test_require_clean_false_runs_over_a_dirty_source(tmp_path: Path) -> None:
    flow = Flow(tmp_path, FakeGitWorktrees(source_dirty=("notes.txt",)))
    flow.both_write(("a", "1"), ("b", "2"))
    assert flow.run(call(requireClean=False)).document()["status"] == "completed"


def test_a_directory_outside_git_is_refused(tmp_path: Path) -> None:
    flow = Flow(tmp_path)
    flow.git.toplevel_of = {}
    error = error_of(flow.run(call()))
    assert error["code"] == "WORKTREE_NOT_GIT"
    assert flow.engine.scripted.runtime.spawned == []


@pytest.mark.parametrize(
    ("git", "said"),
    [
        (FakeGitWorktrees(fail_on="add_worktree"), "scripted failure"),
        (FakeGitWorktrees(), "baseRef 'nope' names no commit"),
    ],
)
def test_a_branch_or_worktree_that_cannot_be_made_is_a_setup_failure(
    tmp_path: Path, git: FakeGitWorktrees, said: str
) -> None:
    flow = Flow(tmp_path, git)
    error = error_of(flow.run(call(baseRef="nope" if "baseRef" in said else "HEAD")))
    assert error["code"] == "WORKTREE_SETUP_FAILED"
    assert said in error["message"]
    assert flow.engine.scripted.runtime.spawned == []


def test_a_failed_writer_stops_the_flow_before_any_merge(tmp_path: Path) -> None:
    flow = Flow(tmp_path)
    flow.writes("writer-api", "a", "1")

    def crash(child: FakeChild) -> None:
        child.exit(1)

    flow.engine.scripted.scripts["writer-docs"] = crash
    error = error_of(flow.run(call()))
    assert error["code"] == "WORKTREE_INTEGRATION_FAILED"
    assert "writer-docs did not complete" in error["message"]
    assert flow.called("merge") == []


def test_a_writer_that_changes_the_source_checkout_fails_the_flow(tmp_path: Path) -> None:
    flow = Flow(tmp_path)
    flow.writes("writer-api", "a", "1")
    flow.escapes("writer-docs")
    error = error_of(flow.run(call()))
    assert error["code"] == "WORKTREE_INTEGRATION_FAILED"
    assert "source checkout /repo changed" in error["message"]


def test_the_check_runs_in_the_integration_worktree_and_a_failure_keeps_everything(
    tmp_path: Path,
) -> None:
    flow = Flow(tmp_path, outcomes=[CheckOutcome(2, "1 test failed")])
    flow.both_write(("a", "1"), ("b", "2"))
    error = error_of(flow.run(call(checkCommand="make test", checkTimeoutMs=5000)))
    assert flow.check.calls == [("make test", f"{SCRATCH}/integration", 5000)]
    assert error["code"] == "WORKTREE_VERIFY_FAILED"
    assert "exit 2" in error["message"]
    assert "1 test failed" in error["message"]
    assert flow.called("remove_worktree") == []


def test_without_a_git_host_the_mode_refuses(tmp_path: Path) -> None:
    engine = Engine(tmp_path, AGENTS)
    error = error_of(engine.run(call()))
    assert error["code"] == "WORKTREE_SETUP_FAILED"
    assert engine.scripted.runtime.spawned == []


def test_the_shared_write_rule_refuses_writers_given_one_directory() -> None:
    parsed: FlowCall = parse_call(call())
    writers = [
        WriterRole(f"$.worktree.tasks[{i}]", "operator", ToolChoice(None), "/same")
        for i in range(2)
    ]
    with pytest.raises(FlowError) as caught:
        check_shared_writes(parsed, writers, [(0, 1)])
    assert caught.value.code == "SHARED_WRITE_CWD"
    distinct = [
        WriterRole(f"$.worktree.tasks[{i}]", "operator", ToolChoice(None), f"/wt/{i}")
        for i in range(2)
    ]
    check_shared_writes(parsed, distinct, [(0, 1)])


def test_the_live_row_plans_one_run_per_writer_and_the_review() -> None:
    assert planned_runs(call()) == len(TASKS) + 1
