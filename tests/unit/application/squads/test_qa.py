"""Upstream QA rework: verdicts, feedback, generated IDs validated and never truncated."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from application.squads.qa import QaVerdict, extract_feedback, parse_verdict, plan_rework
from domain.spec.model import SquadConfig
from domain.squad.model import SpecRef, Squad, SquadStatus, Task, TaskStatus

NOW = datetime(2026, 12, 2, tzinfo=UTC)


@pytest.mark.parametrize(
    ("output", "verdict"),
    [
        ("All good.\n## Verdict: PASS", QaVerdict.PASS),
        ("## Verdict: PASS WITH ISSUES\n## Issues\n- slow", QaVerdict.PASS_WITH_ISSUES),
        ("Verdict: fail", QaVerdict.FAIL),
        ("## Verdict: FAIL\nfixed later\n## Verdict: PASS", QaVerdict.PASS),
        ("3 tests failed", QaVerdict.FAIL),
        ("status: FAIL", QaVerdict.FAIL),
        ("Ran the tests: 0 failures, everything fine", QaVerdict.PASS),
        ("looks fine", QaVerdict.PASS),
    ],
)
def test_verdict_parsing(output: str, verdict: QaVerdict) -> None:
    assert parse_verdict(output) is verdict


def test_feedback_prefers_the_issues_section() -> None:
    output = "Intro\n## Issues\n- crash on empty input\n- wrong exit code\n## Notes\nnone"
    assert extract_feedback(output) == "- crash on empty input\n- wrong exit code"


def _squad(file_squad: bool, max_retries: int = 2) -> Squad:
    spec = (
        SpecRef(sha256="a" * 64, bytes=10, path="/r/s/spec/spec.v1.json", chunk_count=1)
        if file_squad
        else None
    )
    return Squad(
        id="s",
        goal="g",
        status=SquadStatus.RUNNING,
        created=NOW,
        cwd="/p",
        config=SquadConfig(max_concurrency=2, auto_unblock=True, max_retries=max_retries),
        spec=spec,
    )


def _task(
    task_id: str, agent: str, depends: tuple[str, ...] = (), output: str | None = None
) -> Task:
    return Task(
        id=task_id,
        title=task_id,
        description="",
        agent=agent,
        status=TaskStatus.DONE,
        depends=depends,
        created=NOW,
        output=output,
    )


def test_failing_qa_creates_a_fix_and_a_retest_in_a_file_squad() -> None:
    build = _task("build", "backend")
    qa = _task("qa", "qa", ("build",), "## Verdict: FAIL\n## Issues\n- broken")
    plan = plan_rework(_squad(True), {"build": build, "qa": qa}, qa, now=NOW)
    fix, retest = plan.tasks
    assert fix.id == "build-fix-1"
    assert fix.status is TaskStatus.PENDING
    assert fix.file_spec_delta
    assert fix.retry_of == "build"
    assert retest.id == "qa-retest-1"
    assert retest.depends == ("build-fix-1",)
    assert retest.status is TaskStatus.BLOCKED


def test_pass_with_issues_also_triggers_rework_as_upstream() -> None:
    build = _task("build", "backend")
    qa = _task("qa", "qa", ("build",), "## Verdict: PASS WITH ISSUES\n## Issues\n- x")
    assert plan_rework(_squad(False), {"build": build, "qa": qa}, qa, now=NOW).tasks


def test_retry_limit_escalates_instead_of_creating_work() -> None:
    build = _task("build", "backend")
    qa = _task("qa", "qa", ("build",), "## Verdict: FAIL")
    squad = _squad(True, max_retries=0)
    plan = plan_rework(squad, {"build": build, "qa": qa}, qa, now=NOW)
    assert plan.tasks == ()
    assert plan.escalations


def test_generated_id_that_breaks_the_file_pattern_fails_instead_of_truncating() -> None:
    long_id = "b" * 60
    build = _task(long_id, "backend")
    qa = _task("qa", "qa", (long_id,), "## Verdict: FAIL")
    plan = plan_rework(_squad(True), {long_id: build, "qa": qa}, qa, now=NOW)
    assert plan.tasks == ()
    assert plan.failure is not None
    assert "never truncated" in plan.failure


def test_non_qa_agents_never_trigger_rework() -> None:
    build = _task("build", "backend", output="## Verdict: FAIL")
    assert plan_rework(_squad(True), {"build": build}, build, now=NOW).tasks == ()
