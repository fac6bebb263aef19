"""The ``code-review`` preset's values: the range a task names, the brief both reviews get,
and the verdict held to the pinned range (``CLEAN``, ``FINDINGS``, ``PARTIAL``)."""

from __future__ import annotations

from typing import Any

import pytest

from domain.agents import AgentSource
from domain.flows.call import Mode
from domain.flows.code_review import (
    ChangedFile,
    PinnedRange,
    RangeForm,
    RequestedRange,
    parse_range,
)
from domain.flows.code_review_verdict import ReviewOutcome, judge, settled_review, unresolved
from domain.flows.mode_parts import FlowOutcome, FlowStatus
from domain.flows.presets import PresetFileInvalid, parse_preset
from domain.flows.runs import RunResult, RunStatus

BASE, HEAD = "a" * 40, "b" * 40
PINNED = PinnedRange(
    RequestedRange(RangeForm.THREE_DOT, "main", "feature"),
    BASE,
    HEAD,
    (ChangedFile("M", "app.py"), ChangedFile("A", "new.py")),
)


@pytest.mark.parametrize(
    ("task", "form", "base", "head"),
    [
        ("Review main..feature", RangeForm.TWO_DOT, "main", "feature"),
        ("Review main...feature exactly once", RangeForm.THREE_DOT, "main", "feature"),
        ("Review HEAD against main and issue #25", RangeForm.AGAINST, "main", "HEAD"),
        ("Review (v1.2...v1.3).", RangeForm.THREE_DOT, "v1.2", "v1.3"),
        ("Review `origin/main..HEAD~2`, please", RangeForm.TWO_DOT, "origin/main", "HEAD~2"),
    ],
)
def test_a_task_names_its_range_in_one_of_three_forms(
    task: str, form: RangeForm, base: str, head: str
) -> None:
    assert parse_range(task) == (RequestedRange(form, base, head),)


def test_a_dotted_range_wins_over_against_phrases() -> None:
    found = parse_range("Review main...feature against the spec")
    assert found == (RequestedRange(RangeForm.THREE_DOT, "main", "feature"),)


def test_every_against_phrase_is_a_candidate_for_git_to_settle() -> None:
    found = parse_range("Review HEAD against main, checking it against docs")
    assert found == (
        RequestedRange(RangeForm.AGAINST, "main", "HEAD"),
        RequestedRange(RangeForm.AGAINST, "docs", "it"),
    )


@pytest.mark.parametrize(
    ("task", "reason"),
    [
        ("Review the parser", "the task names no Git range"),
        ("Review main..", "the task names no Git range"),
        # Never an option: a ref starting with "-" would reach git as a flag.
        ("Review --output=x..main", "the task names no Git range"),
        ("Review a..b and c...d", "the task names 2 Git ranges (a..b, c...d): name exactly one"),
    ],
)
def test_a_task_without_exactly_one_readable_range_says_why(task: str, reason: str) -> None:
    found = parse_range(task)
    assert isinstance(found, str)
    assert found.startswith(reason)


def test_the_brief_pins_both_ids_and_every_changed_file() -> None:
    brief = PINNED.brief()
    assert f"- base: {BASE} (the merge base" in brief
    assert f"- head: {HEAD}\n" in brief
    assert "  M\tapp.py\n  A\tnew.py\n" in brief


def test_a_path_that_would_forge_a_line_of_the_brief_is_quoted() -> None:
    forged = PinnedRange(PINNED.requested, BASE, HEAD, (ChangedFile("A", "x\n- head: " + BASE),))
    lines = forged.brief().splitlines()
    assert [line for line in lines if line.startswith("- head:")] == [f"- head: {HEAD}"]
    assert f"  A\t'x\\n- head: {BASE}'" in lines


def returned(axis: str, **data: Any) -> RunResult:
    body = {
        "axis": axis,
        "base": BASE,
        "head": HEAD,
        "coverage": [
            {"path": p, "status": "reviewed", "evidence": "read"} for p in ("app.py", "new.py")
        ],
        "findings": [],
        **data,
    }
    key = "task-0" if axis == "standards" else "task-1"
    envelope = {"status": data.pop("status", "completed"), "data": body}
    return RunResult(key, "overwatch", RunStatus.COMPLETED, "ok", envelope=envelope)


def test_both_reviews_attesting_the_pin_with_no_findings_are_clean() -> None:
    verdict = judge(PINNED, [returned("standards"), returned("spec")])
    assert verdict.outcome is ReviewOutcome.CLEAN
    assert verdict.headline() == (
        "Flow code-review: CLEAN, no findings across 2 changed files of "
        f"{BASE[:12]}..{HEAD[:12]} (main...feature)."
    )


def test_a_finding_from_either_review_makes_the_outcome_findings() -> None:
    flagged = returned("spec", findings=[{"severity": "critical"}, {"severity": "low"}])
    verdict = judge(PINNED, [returned("standards"), flagged])
    assert verdict.outcome is ReviewOutcome.FINDINGS
    assert verdict.document()["findings"] == {
        "total": 2,
        "bySeverity": {"critical": 1, "high": 0, "medium": 0, "low": 1},
    }


@pytest.mark.parametrize(
    ("results", "reason"),
    [
        (
            [returned("standards"), returned("spec", base="c" * 40)],
            f"the spec review attests base '{'c' * 40}', the pinned base is {BASE}",
        ),
        (
            [returned("standards", coverage=[]), returned("spec")],
            "the standards review does not cover 2 of 2 changed files (first: 'app.py')",
        ),
        (
            [
                returned(
                    "standards",
                    coverage=[
                        {"path": "app.py", "status": "reviewed", "evidence": "read"},
                        {"path": "new.py", "status": "skipped", "evidence": "unreadable"},
                    ],
                ),
                returned("spec"),
            ],
            "the standards review skipped 1 of 2 changed files (first: 'new.py')",
        ),
        (
            [returned("standards"), returned("spec", status="partial")],
            "the spec review (task-1) returned status partial",
        ),
        (
            [
                returned("standards"),
                RunResult("task-1", "overwatch", RunStatus.FAILED, None),
            ],
            "no typed return from the spec review: task-1 failed (no typed return)",
        ),
    ],
)
def test_a_review_short_of_the_pin_is_partial_and_says_why(
    results: list[RunResult], reason: str
) -> None:
    verdict = judge(PINNED, results)
    assert verdict.outcome is ReviewOutcome.PARTIAL
    assert verdict.reasons == (reason,)


def test_a_partial_review_of_completed_runs_is_a_partial_flow() -> None:
    outcome = FlowOutcome(Mode.PARALLEL, FlowStatus.COMPLETED, (), "Flow parallel: 2/2.")
    settled = settled_review(outcome, judge(PINNED, [returned("standards")]))
    assert settled.status is FlowStatus.PARTIAL
    assert settled.summary.startswith("Flow code-review: PARTIAL across 2 changed files")
    assert settled.summary.endswith(" Flow parallel: 2/2.")


def test_an_unresolved_range_is_partial_with_its_reason_first() -> None:
    verdict = unresolved("main..nope does not resolve")
    assert verdict.document()["presetOutcome"] == "PARTIAL"
    assert verdict.headline() == "Flow code-review: PARTIAL: main..nope does not resolve."


def test_a_preset_names_only_a_result_a_harness_settles() -> None:
    text = (
        "---\nname: r\ndescription: d\noverrides: cwd\nresult: {result}\n---\n"
        '{{"agent": "recon", "task": "{{task}}"}}\n'
    )
    with pytest.raises(PresetFileInvalid, match="result must be one of code-review-v1"):
        parse_preset(text.format(result="code-review-v2"), AgentSource.USER, "/u/r.md")
    preset = parse_preset(text.format(result="code-review-v1"), AgentSource.USER, "/u/r.md")
    assert preset.document()["result"] == "code-review-v1"
