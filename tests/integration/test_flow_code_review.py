"""The bundled ``code-review`` preset through the container's flow runner, with the real Git
adapter on a real repository and scripted reviewers: the range is pinned before dispatch
(two-dot, three-dot at the merge base, ``against``), the returns are held to the pin, and the
outcome is ``CLEAN``, ``FINDINGS`` or ``PARTIAL``."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from application.flows.run_flow import FlowContext
from tests.fakes.code_reviewer import finding, pinned, reviewer
from tests.integration.flow_cli_support import FlowCli, run_call

WHY = "author-independent verification"


def git(repository: Path, *argv: str) -> str:
    environ = {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "a",
        "GIT_AUTHOR_EMAIL": "a@example.com",
        "GIT_COMMITTER_NAME": "a",
        "GIT_COMMITTER_EMAIL": "a@example.com",
    }
    done = subprocess.run(
        ["git", *argv], cwd=repository, env=environ, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def commit(repository: Path, message: str, files: dict[str, str]) -> str:
    for name, text in files.items():
        (repository / name).write_text(text, encoding="utf-8")
    git(repository, "add", "-A")
    git(repository, "commit", "-q", "-m", message)
    return git(repository, "rev-parse", "HEAD")


@pytest.fixture
def cli(tmp_path: Path) -> FlowCli:
    """A project that is a repository: ``main`` gained ``later.py`` after ``feature`` forked
    from it, and ``feature`` changed ``app.py`` and added ``new.py``."""
    flow_cli = FlowCli(tmp_path)
    repository = flow_cli.cwd
    git(repository, "init", "-q", "-b", "main")
    commit(repository, "start", {"app.py": "v1\n", "README": "r\n"})
    git(repository, "checkout", "-q", "-b", "feature")
    commit(repository, "feature", {"app.py": "v2\n", "new.py": "n\n"})
    git(repository, "checkout", "-q", "main")
    commit(repository, "main moves on", {"later.py": "l\n"})
    return flow_cli


def review(cli: FlowCli, task: str) -> dict[str, Any]:
    """The ``code-review`` preset over ``task`` through the container's runner (bash-ro
    screened by the in-child allowlist, as over Pi): its ``--json`` document."""
    runner = cli.container().driver.flow_runner(
        runtime=cli.scripted.runtime, bash_ro_allowlist=True
    )
    call = {"preset": "code-review", "task": task, "why": WHY}
    document: dict[str, Any] = runner.run(
        call, FlowContext(cwd=str(cli.cwd), session_model="p/m")
    ).document()
    return document


def ids(cli: FlowCli, *refs: str) -> list[str]:
    return [git(cli.cwd, "rev-parse", ref) for ref in refs]


def manifest(document: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["status"], f["path"]) for f in document["codeReview"]["range"]["manifest"]]


def test_a_two_dot_range_pins_both_endpoints_into_both_reviews(cli: FlowCli) -> None:
    cli.scripted.default = reviewer()
    document = review(cli, "Review main..feature for issue 25")
    base, head = ids(cli, "main", "feature")
    assert document["codeReview"]["range"]["base"] == base
    assert document["codeReview"]["range"]["head"] == head
    # The two endpoints: main's own later.py is in the diff, as deleted on the way to head.
    assert manifest(document) == [("M", "app.py"), ("D", "later.py"), ("A", "new.py")]
    prompts = [child.request.first_prompt for child in cli.scripted.runtime.spawned]
    assert len(prompts) == 2
    for prompt in prompts:
        assert pinned(prompt) == {
            "base": base,
            "head": head,
            "paths": ["app.py", "later.py", "new.py"],
        }
    assert document["presetOutcome"] == "CLEAN"
    assert document["status"] == "completed"
    assert document["summary"].startswith("Flow code-review: CLEAN, no findings across 3")


def test_a_three_dot_range_is_pinned_at_the_merge_base(cli: FlowCli) -> None:
    cli.scripted.default = reviewer()
    document = review(cli, "Review main...feature exactly once")
    merge_base = git(cli.cwd, "merge-base", "main", "feature")
    assert merge_base != ids(cli, "main")[0]
    assert document["codeReview"]["range"]["base"] == merge_base
    assert document["codeReview"]["range"]["form"] == "three-dot"
    # The branch's own change set: main's later.py is not in it.
    assert manifest(document) == [("M", "app.py"), ("A", "new.py")]
    assert all(
        pinned(child.request.first_prompt)["base"] == merge_base
        for child in cli.scripted.runtime.spawned
    )
    assert document["presetOutcome"] == "CLEAN"


def test_head_against_base_reads_as_the_two_endpoints(cli: FlowCli) -> None:
    cli.scripted.default = reviewer()
    # Prose says "against" too ("check it against the spec"): the phrase whose refs
    # resolve is the range.
    document = review(cli, "Review feature against main and check it against the spec")
    assert document["codeReview"]["range"]["requested"] == "feature against main"
    assert [document["codeReview"]["range"][end] for end in ("base", "head")] == ids(
        cli, "main", "feature"
    )
    assert manifest(document) == [("M", "app.py"), ("D", "later.py"), ("A", "new.py")]


def test_an_unresolvable_ref_is_partial_and_dispatches_nothing(cli: FlowCli) -> None:
    document = review(cli, "Review main..no-such-branch")
    assert cli.scripted.runtime.spawned == []
    assert document["presetOutcome"] == "PARTIAL"
    assert document["status"] == "failed"
    assert document["codeReview"]["range"] is None
    (reason,) = document["codeReview"]["reasons"]
    assert "main..no-such-branch does not resolve" in reason
    assert "git rev-parse --verify <ref>" in reason
    assert document["summary"].startswith("Flow code-review: PARTIAL: main..no-such-branch")


def test_a_return_attesting_another_head_is_partial(cli: FlowCli) -> None:
    stale = ids(cli, "main")[0]

    def stale_spec(axis: str, data: dict[str, Any]) -> dict[str, Any]:
        return {**data, "head": stale} if axis == "spec" else data

    cli.scripted.default = reviewer(stale_spec)
    document = review(cli, "Review main...feature")
    assert document["presetOutcome"] == "PARTIAL"
    assert document["status"] == "partial"
    (reason,) = document["codeReview"]["reasons"]
    assert reason.startswith(f"the spec review attests head '{stale}', the pinned head is")


def test_a_review_that_leaves_a_changed_file_out_is_partial(cli: FlowCli) -> None:
    def partial_standards(axis: str, data: dict[str, Any]) -> dict[str, Any]:
        if axis == "spec":
            return data
        return {**data, "coverage": data["coverage"][:1]}

    cli.scripted.default = reviewer(partial_standards)
    document = review(cli, "Review main...feature")
    assert document["presetOutcome"] == "PARTIAL"
    assert document["codeReview"]["reasons"] == [
        "the standards review does not cover 1 of 2 changed files (first: 'new.py')"
    ]


def test_findings_from_either_review_make_the_outcome_findings(cli: FlowCli) -> None:
    def with_findings(axis: str, data: dict[str, Any]) -> dict[str, Any]:
        severity = "high" if axis == "standards" else "low"
        return {**data, "findings": [finding("app.py", severity)]}

    cli.scripted.default = reviewer(with_findings)
    document = review(cli, "Review main...feature")
    assert document["presetOutcome"] == "FINDINGS"
    assert document["status"] == "completed"
    assert document["codeReview"]["findings"] == {
        "total": 2,
        "bySeverity": {"critical": 0, "high": 1, "medium": 0, "low": 1},
    }
    assert document["summary"].startswith("Flow code-review: FINDINGS, 2 (1 high, 1 low)")
    # The findings themselves are each review's typed return.
    returned = [r["envelope"]["data"]["findings"] for r in document["results"]]
    assert [f[0]["severity"] for f in returned] == ["high", "low"]


def test_the_command_line_exits_1_on_a_partial_review_and_prints_its_outcome(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    status, document = run_call(cli, capsys, {"preset": "code-review", "task": "a..b"}, WHY)
    assert (status, document["presetOutcome"]) == (1, "PARTIAL")
    assert (
        cli.run("--call", cli.call_file({"preset": "code-review", "task": "a..b", "why": WHY})) == 1
    )
    assert "Flow code-review: PARTIAL: a..b does not resolve" in capsys.readouterr().out
