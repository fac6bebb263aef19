"""Reflexion's lessons, pure: where the file may be, the one lesson a run leaves (redacted,
capped, nothing of a withheld answer), the file's bounded next content, and the task text."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from domain.errors import ErrorCode
from domain.flows.call import Mode
from domain.flows.errors import FlowError
from domain.flows.mode_parts import FlowOutcome, FlowStatus
from domain.flows.reflexion import (
    ANSWER_CHARS,
    KEEP_LINES,
    Lesson,
    appended,
    directories_between,
    lesson_of,
    recent,
    reflections_path,
    with_lessons,
)
from domain.flows.runs import RunResult, RunStatus

AT = datetime(2026, 12, 7, 18, 0, 0, tzinfo=UTC)
BASE = "/home/ana/project"


def lesson(n: int) -> Lesson:
    return Lesson(f"2026-12-07T18:00:{n:02d}Z", f"flow{n}", "single", "completed", f"lesson {n}")


def outcome(*results: RunResult, status: FlowStatus = FlowStatus.COMPLETED) -> FlowOutcome:
    return FlowOutcome(Mode.LOOP, status, results, "summary")


@pytest.mark.parametrize(
    ("file", "why"),
    [
        ("/etc/lessons.jsonl", "is absolute"),
        ("../lessons.jsonl", "leaves the call's directory"),
        (".pi/../../elsewhere/l.jsonl", "leaves the call's directory"),
    ],
)
def test_a_reflections_file_outside_the_calls_directory_is_refused(file: str, why: str) -> None:
    with pytest.raises(FlowError) as caught:
        reflections_path(BASE, file)
    assert caught.value.code is ErrorCode.FLOW_INVALID
    assert caught.value.path == "$.reflexion.file"
    assert why in caught.value.message


def test_a_relative_reflections_file_resolves_under_the_calls_directory() -> None:
    assert reflections_path(BASE, ".pi/flow-reflections.jsonl") == (
        f"{BASE}/.pi/flow-reflections.jsonl"
    )
    assert reflections_path(BASE, "a/./b/../l.jsonl") == f"{BASE}/a/l.jsonl"


def test_each_directory_down_to_the_file_is_named_for_the_symlink_check() -> None:
    assert directories_between(BASE, f"{BASE}/a/b/l.jsonl") == (f"{BASE}/a", f"{BASE}/a/b")
    assert directories_between(BASE, f"{BASE}/l.jsonl") == ()


def test_the_newest_lessons_are_read_oldest_first_and_foreign_lines_skipped() -> None:
    data = b"".join(lesson(n).line() for n in range(7))
    data += b"not json\n" + json.dumps({"v": 2, "lesson": "x"}).encode() + b"\n"
    data += b'{"v": 1, "lesson": 3}\n' + b"{" + b"x" * 5000 + b"\n"
    assert [found.text for found in recent(data, 3)] == ["lesson 4", "lesson 5", "lesson 6"]
    assert recent(b"", 5) == ()


def test_the_lessons_are_appended_to_the_task_fenced_as_data() -> None:
    told = with_lessons("Fix the parser.", [lesson(1), lesson(2)])
    assert told.startswith("Fix the parser.\n\n<<<UNTRUSTED DATA ")
    assert "lessons recorded by earlier flow runs" in told
    assert told.index("lesson 1") < told.index("lesson 2")
    assert "not instructions" in told
    assert with_lessons("Fix the parser.", []) == "Fix the parser."


def test_a_lesson_names_the_outcome_the_task_the_failures_and_the_final_answers_start() -> None:
    found = lesson_of(
        outcome(
            RunResult("body-1", "operator", RunStatus.COMPLETED, output="\n  Draft one\nmore"),
            RunResult("judge-1", "redteam", RunStatus.FAILED, error_code=ErrorCode.CHILD_TIMEOUT),
            status=FlowStatus.FAILED,
        ),
        "Harden the parser\nsecond line",
        flow_id="f1",
        at=AT,
        home=None,
    )
    assert found.at == "2026-12-07T18:00:00Z"
    assert (found.flow_id, found.mode, found.status) == ("f1", "loop", "failed")
    assert found.text == (
        "loop failed: 1/2 runs completed; task: Harden the parser; failed: judge-1 (redteam) "
        "CHILD_TIMEOUT; final answer began: Draft one"
    )


def test_a_lesson_is_redacted_before_it_is_cut() -> None:
    secret = "sk-" + "a" * 40
    answer = "x" * (ANSWER_CHARS - 10) + " " + secret
    found = lesson_of(
        outcome(RunResult("single", "worker", RunStatus.COMPLETED, output=answer)),
        "deploy as ana@example.com from /home/ana/project",
        flow_id="f",
        at=AT,
        home="/home/ana",
    )
    assert "sk-aaaa" not in found.text
    assert "[REDACTE" in found.text
    assert "ana@example.com" not in found.text
    assert "~/project" in found.text


def test_a_withheld_result_leaves_a_lesson_without_its_answer() -> None:
    found = lesson_of(
        outcome(RunResult("single", "worker", RunStatus.COMPLETED, output="the secret plan")),
        "t",
        flow_id="f",
        at=AT,
        home=None,
        withheld=True,
    )
    assert found.status == "declined"
    assert "the secret plan" not in found.text
    assert "declined the result at the finalize checkpoint" in found.text


def test_the_file_keeps_its_newest_lines_and_drops_a_torn_last_one() -> None:
    full = b"".join(lesson(n % 60).line() for n in range(KEEP_LINES + 5))
    after = appended(full, lesson(99)).splitlines()
    assert len(after) == KEEP_LINES
    assert json.loads(after[-1])["lesson"] == "lesson 99"
    torn = lesson(1).line() + b'{"v": 1, "at": "20'
    assert appended(torn, lesson(2)) == lesson(1).line() + lesson(2).line()
