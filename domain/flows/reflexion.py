"""Reflexion's lessons (brief §8; its record format and how pi-flows derives a lesson were not
found, so this is pi-squad's own, docs/flows.md "Checkpoint and reflexion"): where the file
is, the one lesson a run leaves, the file's next content, and the task text that carries the
recent lessons. Pure: the file is read and written by ``application.flows.checkpoints``.

A lesson is one JSON line ``{"v": 1, "at", "flowId", "mode", "status", "lesson"}``. Its text
is derived from the outcome alone, never asked of a model: the mode and status, the task's
first line, the runs that failed with their codes, and the first line of the final answer;
every part redacted (secret shapes, e-mail addresses, the home directory) and capped, so the
file never holds a child's whole output.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Sequence
from datetime import datetime

import attrs

from domain.errors import ErrorCode
from domain.flows.errors import FlowError, refuse
from domain.flows.mode_parts import FlowOutcome
from domain.flows.redact import redact
from domain.flows.runs import RunStatus, fence

RECORD_VERSION = 1
# The file keeps the newest lines only: it is rewritten whole at each lesson, so it stays small.
KEEP_LINES = 200
# A line longer than this is not one of ours: skipped when read.
MAX_LINE_BYTES = 4096
TASK_CHARS = 160
ANSWER_CHARS = 240
LESSON_CHARS = 800
MAX_FAILURES = 4
FILE_PATH = "$.reflexion.file"


@attrs.frozen
class Lesson:
    at: str
    flow_id: str
    mode: str
    status: str
    text: str

    def line(self) -> bytes:
        record = {
            "v": RECORD_VERSION,
            "at": self.at,
            "flowId": self.flow_id,
            "mode": self.mode,
            "status": self.status,
            "lesson": self.text,
        }
        return json.dumps(record, ensure_ascii=False, sort_keys=True).encode("utf-8") + b"\n"


def reflections_path(base: str, file: str) -> str:
    """The absolute path of ``file`` under the call's directory ``base``; ``FLOW_INVALID`` when
    it is absolute or climbs out of ``base``."""
    if posixpath.isabs(file):
        raise _outside(file, "is absolute; give a path relative to the call's directory")
    path = posixpath.normpath(posixpath.join(base, file))
    if not path.startswith(base.rstrip("/") + "/"):
        raise _outside(file, "leaves the call's directory")
    return path


def directories_between(base: str, path: str) -> tuple[str, ...]:
    """Each directory from ``base`` (excluded) down to ``path``'s parent: none of them may be a
    symbolic link, or the file would be written outside ``base``."""
    parent = posixpath.dirname(path)
    relative = posixpath.relpath(parent, base)
    if relative == ".":
        return ()
    parts = relative.split("/")
    return tuple(posixpath.join(base, *parts[: i + 1]) for i in range(len(parts)))


def _outside(file: str, why: str) -> FlowError:
    return refuse(
        ErrorCode.FLOW_INVALID,
        FILE_PATH,
        f"{file!r} {why}; the reflections file must stay inside it",
        measured=file,
        allowed="a relative path inside the call's directory",
    )


def recent(data: bytes, max_entries: int) -> tuple[Lesson, ...]:
    """The newest ``max_entries`` lessons of the file's content, oldest first. A line that is
    not a lesson record (torn, foreign, too long) is skipped."""
    found: list[Lesson] = []
    for raw in reversed(data.splitlines()):
        if len(found) == max_entries:
            break
        lesson = _parsed(raw)
        if lesson is not None:
            found.append(lesson)
    return tuple(reversed(found))


def _parsed(raw: bytes) -> Lesson | None:
    if not raw.strip() or len(raw) > MAX_LINE_BYTES:
        return None
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(record, dict) or record.get("v") != RECORD_VERSION:
        return None
    fields = [record.get(key) for key in ("at", "flowId", "mode", "status", "lesson")]
    if not all(isinstance(value, str) for value in fields):
        return None
    at, flow_id, mode, status, text = (str(value) for value in fields)
    return Lesson(at, flow_id, mode, status, text[:LESSON_CHARS])


def with_lessons(task: str, lessons: Sequence[Lesson]) -> str:
    """The top-level task with the recent lessons appended, fenced as data: a lesson quotes a
    child's answer, which must not steer the next run."""
    if not lessons:
        return task
    lines = "\n".join(f"- {lesson.at}: {lesson.text}" for lesson in lessons)
    block = fence("lessons recorded by earlier flow runs in this project, oldest first", lines)
    return f"{task}\n\n{block}"


def lesson_of(
    outcome: FlowOutcome,
    task: str | None,
    *,
    flow_id: str,
    at: datetime,
    home: str | None,
    withheld: bool = False,
) -> Lesson:
    """The one lesson a run that spawned a child leaves. ``withheld``: the person declined the
    result at its finalize checkpoint, so nothing of the answer is kept."""
    done = sum(result.ok for result in outcome.results)
    parts = [f"{outcome.mode} {outcome.status}: {done}/{len(outcome.results)} runs completed"]
    if task:
        parts.append(f"task: {_first_line(task, TASK_CHARS, home)}")
    failed = [r for r in outcome.results if r.status is not RunStatus.COMPLETED and r.error_code]
    if failed:
        named = [f"{r.key} ({r.agent}) {r.error_code}" for r in failed[:MAX_FAILURES]]
        more = len(failed) - MAX_FAILURES
        parts.append("failed: " + ", ".join(named) + (f" and {more} more" if more > 0 else ""))
    if withheld:
        parts.append("the person declined the result at the finalize checkpoint")
    else:
        answer = next(
            (r.output for r in reversed(outcome.results) if r.ok and r.output and r.output.strip()),
            None,
        )
        if answer is not None:
            parts.append(f"final answer began: {_first_line(answer, ANSWER_CHARS, home)}")
    text = redact("; ".join(parts), home=home)[:LESSON_CHARS]
    status = "declined" if withheld else str(outcome.status)
    stamp = at.isoformat(timespec="seconds").replace("+00:00", "Z")
    return Lesson(stamp, flow_id, str(outcome.mode), status, text)


def _first_line(text: str, limit: int, home: str | None) -> str:
    """The first non-blank line of ``text``, redacted before it is cut (a cut secret would no
    longer have the shape redaction finds)."""
    text = redact(text, home=home)
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def appended(data: bytes, lesson: Lesson) -> bytes:
    """The file's next content: its newest lines (at most ``KEEP_LINES`` with the new one), a
    torn last line dropped, then ``lesson``."""
    lines = [line for line in data.splitlines() if line.strip()]
    if data and not data.endswith(b"\n") and lines:
        lines.pop()
    kept = lines[-(KEEP_LINES - 1) :] if KEEP_LINES > 1 else []
    return b"".join(line + b"\n" for line in kept) + lesson.line()
