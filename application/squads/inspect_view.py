"""The inspect overlay's pages (``/squad inspect [TASK]``, the shortcut, ``/squad watch``): one
page per task of the squads in view, with its child's recent activity, its read progress, its
mailbox and why it stopped. Python writes the text; the shim only draws it and moves between
pages (docs/bridge.md, ``inspect``). Reading never writes anything."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from application.ports import Clock, Store, ToolFailure
from application.squads.child_activity import (
    child_history,
    doing_text,
    elapsed_seconds,
)
from application.squads.status import (
    SquadStatusReport,
    TaskStatusLine,
    first_line,
    format_elapsed,
)
from domain.flows.redact import redact
from domain.squad.messages import MailboxEntry, Message
from domain.squad.model import SquadStatus, Task, TaskStatus

INSPECT_METHOD = "inspect"
RECENT_ENTRIES = 8
MAILBOX_ENTRIES = 3
LINE_CHARS = 100
NOTHING_TO_INSPECT = (
    "No squad of this project is in view (running, paused, awaiting review or stopped): "
    "nothing to inspect. /squad status shows the newest squad."
)


def _mailbox_lines(entries: Sequence[MailboxEntry]) -> list[str]:
    pending = sum(entry.pending for entry in entries)
    awaiting = sum(entry.awaiting_reply for entry in entries)
    lines = [f"mailbox: {len(entries)} · {pending} not delivered · {awaiting} awaiting a reply"]
    for entry in entries[-MAILBOX_ENTRIES:]:
        state = "not delivered" if entry.pending else "delivered"
        text = first_line(redact(entry.message.text), LINE_CHARS)
        lines.append(f"  {entry.message.sender} ({state}): {text}")
    return lines


def _now_text(line: TaskStatusLine, history: Sequence[Message]) -> str:
    if line.status is not TaskStatus.IN_PROGRESS:
        return "no child runs"
    return doing_text(history[-1]) if history else "starting (no tool or line yet)"


def _reason_lines(line: TaskStatusLine) -> list[str]:
    if line.reason is not None:
        return [f"reason: {first_line(line.reason, LINE_CHARS)}"]
    if line.monitor is not None:
        return [f"monitor: {first_line(line.monitor, LINE_CHARS)}"]
    return ["reason: none (nothing stopped it)"]


@attrs.frozen
class SquadInspector:
    store: Store
    clock: Clock

    def instruction(
        self, reports: Sequence[SquadStatusReport], task: str | None = None
    ) -> dict[str, Any]:
        """The ``inspect`` ui instruction: a page per task of the squads not done (a failed
        squad's pages say why its tasks stopped), the one ``task`` names (an id or a unique
        prefix) selected, else the first running."""
        shown = [r for r in reports if r.squad.status is not SquadStatus.DONE and r.tasks]
        if not shown:
            raise ToolFailure(NOTHING_TO_INSPECT)
        pages: list[dict[str, Any]] = []
        for report in shown:
            snapshot = self.store.snapshot(report.squad.id)
            for line in report.tasks:
                pages.append(self._page(report, line, snapshot.tasks.get(line.task_id)))
        return {"method": INSPECT_METHOD, "pages": pages, "selected": _selected(pages, task)}

    def _page(
        self, report: SquadStatusReport, line: TaskStatusLine, task: Task | None
    ) -> dict[str, Any]:
        squad_id = report.squad.id
        elapsed = None if task is None else elapsed_seconds(task, self.clock.now())
        title = f"squad {squad_id} · {line.icon} {line.task_id} ({line.agent}) {line.status}"
        if elapsed is not None:
            title += f" · {format_elapsed(elapsed)}"
        history = child_history(self.store.messages(squad_id, line.task_id))
        lines = [
            f"now: {_now_text(line, history)}",
            f"read: {line.attestation_text}",
            *_reason_lines(line),
            *_mailbox_lines(self.store.mailbox(squad_id, line.task_id)),
            "recent activity:" if history else "recent activity: none yet",
        ]
        for message in history[-RECENT_ENTRIES:]:
            when = message.ts.strftime("%H:%M:%S")
            lines.append(f"  {when} {first_line(doing_text(message), LINE_CHARS)}")
        return {
            "key": f"{squad_id}/{line.task_id}",
            "taskId": line.task_id,
            "running": line.status is TaskStatus.IN_PROGRESS,
            "title": title,
            "lines": lines,
        }


def _selected(pages: Sequence[dict[str, Any]], task: str | None) -> int:
    if task is None:
        return next((i for i, page in enumerate(pages) if page["running"]), 0)
    exact = [i for i, page in enumerate(pages) if page["taskId"] == task]
    matches = exact or [i for i, page in enumerate(pages) if page["taskId"].startswith(task)]
    if len(matches) == 1 or exact:
        return matches[0]
    ids = ", ".join(page["taskId"] for page in pages)
    if matches:
        raise ToolFailure(
            f"/squad inspect {task}: the prefix matches {len(matches)} tasks; type more of the "
            f"id (tasks in view: {ids})"
        )
    raise ToolFailure(
        f"/squad inspect {task}: no task of the squads in view has that id (tasks in view: "
        f"{ids}); /squad status lists a squad's tasks"
    )
