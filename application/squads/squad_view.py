"""What a main Pi shows of the squads it keeps in view (``application/squads/attention.py``):
one status-bar item and one widget above the editor, drawn from the same status report as
``pi-squad status`` (never a spec field: a task is its id, agent, status, read progress,
attestation state, usage and the first line of why it failed). Each squad's block says its state
and the ``/squad`` command that moves it on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from application.squads.attention import next_steps, state_text
from application.squads.child_activity import ActivityKey, ChildActivity
from application.squads.status import (
    SquadStatusReport,
    TaskStatusLine,
    first_line,
    format_elapsed,
)
from domain.squad.model import SquadStatus, TaskStatus

STATUS_KEY = "pi-squad"
WIDGET_KEY = "pi-squad"
MAX_WIDGET_TASKS = 12
WIDGET_REASON_CHARS = 80
# A squad at work or awaiting review lists its tasks; a paused, failed or cancelled one is its
# header and next step (``/squad status`` lists its tasks), so old squads take two lines each.
TASKS_LISTED = frozenset({SquadStatus.RUNNING, SquadStatus.REVIEW})


@attrs.frozen
class SquadView:
    """The status item (``None`` clears it) and the widget lines (``None`` clears it)."""

    status: str | None
    widget: tuple[str, ...] | None


def squad_view(
    reports: Sequence[SquadStatusReport],
    *,
    expanded: bool = False,
    activities: Mapping[ActivityKey, ChildActivity] | None = None,
) -> SquadView:
    """One item for every squad shown, one widget block per squad not done;
    ``expanded`` lists every task instead of the first :data:`MAX_WIDGET_TASKS`; a running
    task's line ends with its ``activities`` entry (current tool or latest line, elapsed)."""
    if not reports:
        return SquadView(status=None, widget=None)
    status = " · ".join(status_item(report) for report in reports)
    lines: list[str] = []
    for report in reports:
        if report.squad.status is SquadStatus.DONE:
            continue  # accepted: nothing left for the person
        if report.squad.status not in TASKS_LISTED:
            lines += [header_line(report), next_line(report)]
            continue
        lines += widget_lines(
            report, limit=None if expanded else MAX_WIDGET_TASKS, activities=activities or {}
        )
    return SquadView(status=status, widget=tuple(lines) or None)


def status_item(report: SquadStatusReport) -> str:
    squad = report.squad
    text = f"squad {squad.id}: {squad.status_word} {report.done}/{report.total}"
    if squad.status is SquadStatus.REVIEW:
        text += f" · {state_text(report)}"
    return text


def header_line(report: SquadStatusReport) -> str:
    squad = report.squad
    header = f"squad {squad.id} · {state_text(report)} · {report.progress_text()}"
    if report.cost:
        header += f" · ${report.cost:.4f}"
    if report.undriven:
        header += " · nothing drives it"
    return header


def next_line(report: SquadStatusReport) -> str:
    return f"  next: {next_steps(report)}"


def widget_lines(
    report: SquadStatusReport,
    *,
    limit: int | None = MAX_WIDGET_TASKS,
    activities: Mapping[ActivityKey, ChildActivity] | None = None,
) -> list[str]:
    squad = report.squad
    lines = [header_line(report), next_line(report)]
    if squad.quarantine is not None:
        lines.append(f"  quarantined: {first_line(squad.quarantine)}")
    shown = report.tasks if limit is None else report.tasks[:limit]
    found = activities or {}
    lines += [
        task_line(
            task, spec_squad=squad.spec is not None, activity=found.get((squad.id, task.task_id))
        )
        for task in shown
    ]
    if len(report.tasks) > len(shown):
        lines.append(f"  … {len(report.tasks) - len(shown)} more: /squad watch lists them all")
    return lines


def task_line(
    task: TaskStatusLine, *, spec_squad: bool, activity: ChildActivity | None = None
) -> str:
    line = f"  {task.icon} {task.task_id} ({task.agent}) {task.status}"
    if spec_squad:
        line += f" · {first_line(task.attestation_text, WIDGET_REASON_CHARS)}"
    usage = task.usage
    if usage.input_tokens or usage.output_tokens:
        line += f" · {usage.input_tokens + usage.output_tokens} tok ${usage.cost:.4f}"
    if task.reason is not None:
        line += f" · {first_line(task.reason, WIDGET_REASON_CHARS)}"
    elif task.monitor is not None and task.status is TaskStatus.IN_PROGRESS:
        line += f" · monitor: {first_line(task.monitor, WIDGET_REASON_CHARS)}"
    if activity is not None and task.status is TaskStatus.IN_PROGRESS:
        line += activity_text(activity)
    return line


def activity_text(activity: ChildActivity) -> str:
    """`` · <current tool or latest line> · <elapsed>``, each part when known."""
    text = ""
    if activity.doing is not None:
        text += f" · {first_line(activity.doing, WIDGET_REASON_CHARS)}"
    if activity.elapsed_seconds is not None:
        text += f" · {format_elapsed(activity.elapsed_seconds)}"
    return text
