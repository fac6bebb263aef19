"""A squad's status (upstream ``squad_status``), read-only.

Nothing here writes: no lock file, no transaction, no progress file moved aside. Attestation
states and chunk counts come from the read-only audit of each task's ledger against one
verified read of the canonical bytes. In file mode the text never shows titles or any other
spec field: a task line is its ID, agent, status and read progress.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs

from application.attestation_check import AttestationAuditor
from application.canonical import CanonicalSpec
from application.ports import Clock, LockFactory, StableReadError, Store
from application.spec_reads import AttestationStatus
from application.squads.documents import (
    cancellation_document,
    isolation_document,
    review_document,
    spec_document,
    status_words,
)
from application.squads.read_words import task_word
from domain.attestation.words import NOT_REQUIRED_WORD, AttestationWord
from domain.errors import ErrorCode, NotFoundError, PiSquadError, RecordError
from domain.isolation import isolation_statement
from domain.squad.model import Squad, SquadStatus, Task, TaskStatus
from domain.usage import Usage

ICONS = {
    TaskStatus.DONE: "✓",
    TaskStatus.IN_PROGRESS: "⏳",
    TaskStatus.BLOCKED: "◻",
    TaskStatus.FAILED: "✗",
    TaskStatus.SUSPENDED: "⏸",
    TaskStatus.CANCELLED: "⊘",
}
OTHER_ICON = "·"


@attrs.frozen
class TaskStatusLine:
    task_id: str
    agent: str
    title: str
    status: TaskStatus
    blocked_by: tuple[str, ...]
    attestation: AttestationStatus
    chunks_read: int | None
    chunk_count: int | None
    reason: str | None = None
    """The first line of why a failed or suspended task stopped (``Task.error``); the full text is
    in ``pi-squad report``."""
    usage: Usage = attrs.field(factory=Usage)
    monitor: str | None = None
    """The monitor's last action on the task's child (steered, escalated, stopped)."""
    word: AttestationWord = NOT_REQUIRED_WORD
    """What is true of the task's read, in the words every face shows
    (``domain/attestation/words.py``); ``attestation`` is the auditor's bare verdict."""

    @property
    def icon(self) -> str:
        return ICONS.get(self.status, OTHER_ICON)

    @property
    def chunks_text(self) -> str:
        """``read/count``, with ``?`` while the ledger could not be read."""
        read = "?" if self.chunks_read is None else str(self.chunks_read)
        return f"{read}/{self.chunk_count}"

    @property
    def attestation_text(self) -> str:
        """``attestation <word>``: ``attestation reading 2/4``, ``attestation invalid: ...``."""
        return f"attestation {self.word.text}"


@attrs.frozen
class SquadStatusReport:
    squad: Squad
    tasks: tuple[TaskStatusLine, ...]
    cost: float
    elapsed_seconds: float
    canonical_problem: str | None
    driven: bool | None = None
    """Whether a process drives this running squad now (``None``: not asked, or not knowable)."""

    @property
    def undriven(self) -> bool:
        """Running, and no process drives it: nothing will happen until one does."""
        return self.driven is False and self.squad.status is SquadStatus.RUNNING

    @property
    def needs_resume(self) -> bool:
        """Work remains that no driver starts by itself: a paused squad, or suspended or
        failed tasks (a driver never resumes them; contract: pause semantics)."""
        return self.squad.status is SquadStatus.PAUSED or any(
            t.status in STOPPED for t in self.tasks
        )

    def next_command(self, *, inside_pi: bool = False) -> str:
        """What moves the squad on: inside Pi a ``/squad`` command (``/squad resume`` revives
        stopped tasks and drives the squad), in a terminal ``run``, after ``modify ... resume``
        when the remaining work needs it first."""
        squad_id = self.squad.id
        if inside_pi:
            return f"/squad resume {squad_id}"
        run = f"pi-squad run --squad {squad_id}"
        return f"pi-squad modify {squad_id} resume, then {run}" if self.needs_resume else run

    def report_command(self, *, inside_pi: bool = False) -> str:
        prefix = "/squad" if inside_pi else "pi-squad"
        return f"{prefix} report {self.squad.id}"

    @property
    def done(self) -> int:
        return sum(1 for t in self.tasks if t.status is TaskStatus.DONE)

    @property
    def cancelled(self) -> int:
        return sum(1 for t in self.tasks if t.status is TaskStatus.CANCELLED)

    @property
    def total(self) -> int:
        return len(self.tasks)

    def progress_text(self) -> str:
        if self.cancelled:
            active = self.total - self.cancelled
            return (
                f"{self.done}/{active} active tasks done · {self.cancelled} cancelled · "
                f"{self.total} total"
            )
        return f"{self.done}/{self.total} tasks done"

    @property
    def review_text(self) -> str | None:
        """``<status>[ (<verdict>)]`` of the current review, ``None`` without one."""
        review = self.squad.review
        if review is None:
            return None
        verdict = f" ({review.verdict})" if review.verdict is not None else ""
        return f"{review.status}{verdict}"

    def text(self, *, inside_pi: bool = False) -> str:
        """The status as lines; ``inside_pi`` names ``/squad`` commands as the next steps."""
        squad = self.squad
        lines = [
            f"Squad: {squad.id}",
            f"Status: {status_words(squad)}",
            f"Progress: {self.progress_text()}",
            f"Elapsed: {format_elapsed(self.elapsed_seconds)}",
            f"Cost: ${self.cost:.4f}",
        ]
        if self.undriven:
            lines.append(
                "Driver: none, nothing will change; continue it with: "
                f"{self.next_command(inside_pi=inside_pi)}"
            )
        if self.review_text is not None:
            lines.append(f"Review: {self.review_text}")
        if squad.spec is not None:
            lines.append(
                f"Spec: {squad.spec.path} (SHA-256 {squad.spec.sha256}, {squad.spec.bytes} "
                f"bytes, {squad.spec.chunk_count} chunks)"
            )
            lines.append(
                f"Isolation: {isolation_statement(squad.isolation, squad.isolation_layers)}"
            )
        if self.canonical_problem is not None:
            lines.append(f"Canonical spec FAILS verification: {self.canonical_problem}")
        if squad.quarantine is not None:
            lines.append(f"Quarantined: {squad.quarantine}")
        for task in self.tasks:
            if squad.spec is not None:
                line = f"{task.icon} {task.task_id} ({task.agent}) [{task.status}]"
                line += f" {task.attestation_text}"
            else:
                line = f"{task.icon} {task.task_id} ({task.agent}) — {task.title} [{task.status}]"
            if task.status is TaskStatus.BLOCKED and task.blocked_by:
                line += f" blocked by: {', '.join(task.blocked_by)}"
            lines.append(line)
            if task.reason is not None:
                full_text = self.report_command(inside_pi=inside_pi)
                lines.append(f"    reason: {task.reason} (full text: {full_text})")
            if task.monitor is not None:
                lines.append(f"    monitor: {task.monitor}")
        return "\n".join(lines)

    def document(self) -> dict[str, Any]:
        squad = self.squad
        spec = squad.spec
        return {
            "squadId": squad.id,
            "status": str(squad.status),
            "cancelled": cancellation_document(squad),
            "driven": self.driven,
            "progress": {"done": self.done, "total": self.total, "cancelled": self.cancelled},
            "review": None if squad.review is None else review_document(squad.review),
            "isolation": isolation_document(squad.isolation, squad.isolation_layers),
            "spec": None if spec is None else spec_document(spec),
            "tasks": [
                {
                    "taskId": t.task_id,
                    "agent": t.agent,
                    "status": str(t.status),
                    "attestation": str(t.attestation),
                    "chunksRead": t.chunks_read,
                    "chunkCount": t.chunk_count,
                    "attestationState": str(t.word.word),
                    "attestationText": t.word.text,
                    "reason": t.reason,
                    "monitor": t.monitor,
                }
                for t in self.tasks
            ],
        }


def format_elapsed(seconds: float) -> str:
    whole = max(0, int(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes}m {secs}s"
    if minutes:
        return f"{minutes}m {secs}s"
    return f"{secs}s"


@attrs.frozen
class SquadStatusReader:
    _store: Store
    _auditor: AttestationAuditor
    _clock: Clock
    _locks: LockFactory | None = None
    """Asks whether a process drives a running squad; ``None``: the report does not say."""

    def newest_squad_id(self) -> str:
        """The newest readable squad. With none, a squad whose own record cannot be read is
        named with the reason (fail closed): "no squads" would hide a damaged one."""
        ids = self._store.list_squad_ids()
        if ids:
            return ids[-1]
        unreadable = self._store.unreadable_squad_ids()
        if not unreadable:
            raise NotFoundError(
                ErrorCode.SQUAD_NOT_FOUND,
                f"no squads under {self._store.root}; create one with `pi-squad create`",
            )
        squad_id = unreadable[-1]
        try:
            self._store.snapshot(squad_id)
        except PiSquadError as exc:
            code, problem = exc.code, exc.message
        except StableReadError as exc:
            code, problem = ErrorCode.RECORD_CORRUPT, str(exc)
        else:
            return squad_id  # restored since it was listed
        others = ", ".join(f"'{other}'" for other in unreadable[:-1])
        also = f" (so are {others})" if others else ""
        message = (
            f"no readable squad under {self._store.root}: squad '{squad_id}' is there but its "
            f"record cannot be read{also}: {problem}; once it is restored, "
            f"`pi-squad verify {squad_id}` checks the squad"
        )
        if code is ErrorCode.RECORD_CORRUPT:
            raise RecordError(code, message)
        raise PiSquadError(code, message)

    def status(self, squad_id: str | None = None) -> SquadStatusReport:
        target = squad_id if squad_id is not None else self.newest_squad_id()
        snapshot = self._store.snapshot(target)
        squad, tasks = snapshot.squad, snapshot.tasks
        canonical, problem = self._auditor.canonical_or_problem(squad)
        lines = tuple(
            self._line(squad, tasks, tasks[task_id], canonical, problem)
            for task_id in sorted(tasks)
        )
        now = self._clock.now()
        end = _end_time(squad) or now
        return SquadStatusReport(
            driven=self._driven(squad),
            squad=squad,
            tasks=lines,
            cost=sum(t.usage.cost for t in tasks.values()),
            elapsed_seconds=(end - squad.created).total_seconds(),
            canonical_problem=problem,
        )

    def _driven(self, squad: Squad) -> bool | None:
        """Whether a process holds the squad's driver lock; only asked while it runs (a paused,
        reviewed or settled squad needs no driver)."""
        if self._locks is None or squad.status is not SquadStatus.RUNNING:
            return None
        return self._locks.is_held(self._store.layout(squad.id).driver_lock)

    def _line(
        self,
        squad: Squad,
        tasks: Mapping[str, Task],
        task: Task,
        canonical: CanonicalSpec | None,
        canonical_problem: str | None,
    ) -> TaskStatusLine:
        blocked_by = tuple(
            d for d in task.depends if d not in tasks or tasks[d].status is not TaskStatus.DONE
        )
        attestation = AttestationStatus.NOT_REQUIRED
        check = None
        if squad.spec is not None:
            if canonical is None:
                attestation = AttestationStatus.INVALID
            else:
                check = self._auditor.validate_task_attestation(squad, task, canonical)
                attestation = check.status
            if task.status is TaskStatus.CANCELLED:
                attestation = AttestationStatus.NOT_REQUIRED  # excluded, as in completion
        word = task_word(squad, task, check, canonical_problem=canonical_problem)
        return TaskStatusLine(
            task_id=task.id,
            agent=task.agent,
            title=task.title,
            status=task.status,
            blocked_by=blocked_by,
            attestation=attestation,
            chunks_read=word.chunks_read,
            chunk_count=None if squad.spec is None else squad.spec.chunk_count,
            reason=stop_reason(task),
            usage=task.usage,
            monitor=None if task.monitor is None else first_line(task.monitor),
            word=word,
        )


STOPPED = frozenset({TaskStatus.FAILED, TaskStatus.SUSPENDED})
MAX_REASON_CHARS = 160


def stop_reason(task: Task) -> str | None:
    """The first line of a failed or suspended task's error, or ``None``."""
    if task.status not in STOPPED or not task.error:
        return None
    return first_line(task.error) or None


def first_line(text: str, limit: int = MAX_REASON_CHARS) -> str:
    """The first non-empty line, cut at ``limit`` characters with an ellipsis."""
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _end_time(squad: Squad) -> datetime | None:
    """A squad accepted as done stops its clock at the recorded review."""
    if squad.status is SquadStatus.DONE and squad.review is not None:
        return squad.review.completed_at
    return None


def review_gate_text(report: SquadStatusReport) -> str:
    """The review gate. In file mode it names only the spec identity and, per task, its status,
    attestation state and chunks read: the proof the reviewer came for, audited now."""
    squad = report.squad
    lines = [f"Squad {squad.id} is awaiting orchestrator review."]
    if squad.spec is not None:
        lines.append(f"Canonical spec: {squad.spec.path} (SHA-256 {squad.spec.sha256}).")
        for task in report.tasks:
            lines.append(
                f"- {task.task_id} ({task.agent}): {task.status} · {task.attestation_text}"
            )
        required = [t for t in report.tasks if t.attestation is not AttestationStatus.NOT_REQUIRED]
        valid = sum(1 for t in required if t.attestation is AttestationStatus.VALID)
        lines.append(
            f"Attestations: {valid} of {len(required)} required verify against the canonical "
            "spec (the proof each task read every chunk; it says nothing of the work itself)."
        )
    else:
        for task in report.tasks:
            lines.append(f"- {task.task_id} ({task.agent}): {task.title} [{task.status}]")
    lines.append("Record a verdict with squad_review (pass, pass_with_issues or fail).")
    return "\n".join(lines)
