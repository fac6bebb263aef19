"""What a main Pi shows of the squads it drives: one status-bar item and one widget above the
editor, drawn from the same status report as ``pi-squad status`` (never a spec field: a task is
its id, agent, status, read progress, attestation state, usage and the first line of why it
failed)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from application.squads.status import SquadStatusReport, TaskStatusLine, first_line
from domain.squad.model import SquadStatus, TaskStatus

STATUS_KEY = "pi-squad"
WIDGET_KEY = "pi-squad"
MAX_WIDGET_TASKS = 12
WIDGET_REASON_CHARS = 80
SETTLED = frozenset({SquadStatus.DONE, SquadStatus.FAILED})


@attrs.frozen
class SquadView:
    """The status item (``None`` clears it) and the widget lines (``None`` clears it)."""

    status: str | None
    widget: tuple[str, ...] | None


def squad_view(reports: Sequence[SquadStatusReport], *, expanded: bool = False) -> SquadView:
    """One item for every squad shown, one widget block per squad that is not settled;
    ``expanded`` lists every task instead of the first :data:`MAX_WIDGET_TASKS`."""
    if not reports:
        return SquadView(status=None, widget=None)
    status = " · ".join(status_item(report) for report in reports)
    lines: list[str] = []
    for report in reports:
        if report.squad.status in SETTLED:
            continue
        lines += widget_lines(report, limit=None if expanded else MAX_WIDGET_TASKS)
    return SquadView(status=status, widget=tuple(lines) or None)


def status_item(report: SquadStatusReport) -> str:
    squad = report.squad
    text = f"squad {squad.id}: {squad.status} {report.done}/{report.total}"
    if squad.status is SquadStatus.REVIEW:
        text += " · review needed"
    return text


def widget_lines(report: SquadStatusReport, *, limit: int | None = MAX_WIDGET_TASKS) -> list[str]:
    squad = report.squad
    header = f"squad {squad.id} · {squad.status} · {report.progress_text()}"
    if report.cost:
        header += f" · ${report.cost:.4f}"
    if report.undriven:
        header += f" · nothing drives it: /squad resume {squad.id}"
    lines = [header]
    if squad.quarantine is not None:
        lines.append(f"  quarantined: {first_line(squad.quarantine)}")
    shown = report.tasks if limit is None else report.tasks[:limit]
    lines += [task_line(task, spec_squad=squad.spec is not None) for task in shown]
    if len(report.tasks) > len(shown):
        lines.append(f"  … {len(report.tasks) - len(shown)} more: /squad watch lists them all")
    return lines


def task_line(task: TaskStatusLine, *, spec_squad: bool) -> str:
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
    return line
