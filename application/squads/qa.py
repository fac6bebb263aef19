"""QA verdicts and the rework they trigger (upstream §4 "QA rework").

When a QA-like agent finishes with anything but a plain PASS, each implementer it depends on
gets a fix task ``<original>-fix-<n>`` and the QA task a retest ``<qa>-retest-<n>`` depending
on it, up to ``maxRetries``. Generated IDs are validated, never truncated: in a file squad an
ID that would not fit the pattern fails the QA task instead.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from datetime import datetime

import attrs

from domain.squad.ids import SAFE_TASK_ID_PATTERN, TASK_ID_PATTERN
from domain.squad.model import Squad, Task, TaskStatus

QA_AGENTS = frozenset({"qa", "tester", "security", "reviewer"})
_VERDICT_LINE = re.compile(
    r"^\s*#{0,6}\s*verdict\s*:\s*(pass with issues|pass|fail)\b", re.I | re.M
)
_FALLBACK_FAIL = (
    re.compile(r"(verdict|status)\s*:\s*fail", re.I),
    # "0 failures" is a pass; only a non-zero count of failures fails.
    re.compile(r"\b0*[1-9]\d*\s+(tests?\s+)?fail(ed|ing|ures?)?\b", re.I),
)
_ISSUES_SECTION = re.compile(
    r"^#{1,6}\s*(issues|failures|bugs|problems|failed tests)\s*$(.*?)(?=^#{1,6}\s|\Z)",
    re.I | re.M | re.S,
)
_FAILURE_LINE = re.compile(r"fail|error|✗|✘|broken|bug", re.I)


class QaVerdict(enum.StrEnum):
    PASS = "pass"
    PASS_WITH_ISSUES = "pass_with_issues"
    FAIL = "fail"


def parse_verdict(output: str) -> QaVerdict:
    """The explicit ``Verdict:`` line if any (the last one wins), else upstream's fallbacks."""
    found = _VERDICT_LINE.findall(output)
    if found:
        word = found[-1].lower()
        if word == "pass":
            return QaVerdict.PASS
        return QaVerdict.PASS_WITH_ISSUES if word == "pass with issues" else QaVerdict.FAIL
    if any(pattern.search(output) for pattern in _FALLBACK_FAIL):
        return QaVerdict.FAIL
    lowered = output.lower()
    if "fail" in lowered and "test" in lowered and "0 fail" not in lowered:
        return QaVerdict.FAIL
    return QaVerdict.PASS


def extract_feedback(output: str) -> str:
    section = _ISSUES_SECTION.search(output)
    if section and section.group(2).strip():
        return section.group(2).strip()
    lines = [line for line in output.splitlines() if _FAILURE_LINE.search(line)]
    return "\n".join(lines) if lines else output


@attrs.frozen
class ReworkPlan:
    tasks: tuple[Task, ...] = ()
    escalations: tuple[str, ...] = ()
    failure: str | None = None


def _valid_generated_id(squad: Squad, task_id: str) -> bool:
    pattern = TASK_ID_PATTERN if squad.spec is not None else SAFE_TASK_ID_PATTERN
    return bool(pattern.match(task_id)) and task_id != "spec"


def plan_rework(
    squad: Squad, tasks: Mapping[str, Task], qa_task: Task, *, now: datetime
) -> ReworkPlan:
    """Rework for a finished QA task; empty when it passed or is not a QA agent."""
    if qa_task.agent not in QA_AGENTS:
        return ReworkPlan()
    verdict = parse_verdict(qa_task.output or "")
    if verdict is QaVerdict.PASS:
        return ReworkPlan()
    feedback = extract_feedback(qa_task.output or "")
    fixes: list[Task] = []
    escalations: list[str] = []
    qa_root = qa_task.retry_of or qa_task.id
    for dependency_id in qa_task.depends:
        implementer = tasks.get(dependency_id)
        if implementer is None or implementer.agent in QA_AGENTS:
            continue
        original = implementer.retry_of or implementer.id
        count = implementer.retry_count
        if count is None:
            count = sum(1 for t in tasks.values() if t.retry_of == original)
        if count >= squad.config.max_retries:
            escalations.append(
                f"QA task {qa_task.id} reported {verdict} but {original} reached its retry limit "
                f"({squad.config.max_retries}); a person must decide."
            )
            continue
        fixes.append(
            Task(
                id=f"{original}-fix-{count + 1}",
                title=f"Fix QA findings in {original}",
                description=f"QA found issues in {original} (task {qa_task.id}).\n\n"
                f"## QA Feedback\n{feedback}",
                agent=implementer.agent,
                status=TaskStatus.PENDING,
                depends=(),
                created=now,
                inherit_context=implementer.inherit_context,
                file_spec_delta=squad.spec is not None,
                retry_of=original,
                retry_count=count + 1,
                qa_feedback=feedback,
            )
        )
    if not fixes:
        return ReworkPlan(escalations=tuple(escalations))
    # One retest per QA run, after every fix it asked for (several implementers must not
    # produce the same retest id twice).
    retests = sum(1 for t in tasks.values() if t.retry_of == qa_root and t.agent == qa_task.agent)
    retest = Task(
        id=f"{qa_root}-retest-{retests + 1}",
        title=f"Retest after {', '.join(f.id for f in fixes)}",
        description=f"Re-run the checks of {qa_root} against the fixes in "
        f"{', '.join(f.id for f in fixes)}.",
        agent=qa_task.agent,
        status=TaskStatus.BLOCKED,
        depends=tuple(f.id for f in fixes),
        created=now,
        file_spec_delta=squad.spec is not None,
        retry_of=qa_root,
    )
    created = [*fixes, retest]
    for generated in created:
        if generated.id in tasks or not _valid_generated_id(squad, generated.id):
            return ReworkPlan(
                failure=f"Rework task id '{generated.id[:80]}' is invalid or already taken; "
                "rework was not generated (ids are never truncated)."
            )
    # Work that waited for this QA task now waits for its retest as well.
    for waiting in tasks.values():
        if qa_task.id in waiting.depends and waiting.status in {
            TaskStatus.PENDING,
            TaskStatus.BLOCKED,
        }:
            created.append(
                attrs.evolve(
                    waiting,
                    depends=(*waiting.depends, retest.id),
                    status=TaskStatus.BLOCKED,
                )
            )
    return ReworkPlan(tasks=tuple(created), escalations=tuple(escalations))
