"""``pi-squad flow status [ID]`` and ``pi-squad flow list``: the flow runs recorded under the
squad root (``application.flows.run_records``), as lines for people or one JSON object.

``status --json``: the run's document (``runId``, ``mode``, ``status`` as shown now, ``runs``,
``next``...). ``list --json``: ``{"runs": [...], "unreadable": [{"runId", "reason"}]}``.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from application.flows.flow_journal import RunView
from entrypoints.output import EXIT_OK, emit_json

if TYPE_CHECKING:
    from entrypoints.container import CliContainer
    from entrypoints.reading_container import ReadingContainer


def _when(view: RunView) -> str:
    return view.record.started_at.strftime("%Y-%m-%d %H:%M:%SZ")


def status_lines(view: RunView) -> list[str]:
    record = view.record
    shown = view.status
    lines = [f"flow run {record.run_id} ({record.mode}): {shown}"]
    ended = record.ended_at.strftime("%Y-%m-%d %H:%M:%SZ") if record.ended_at else "not yet"
    lines.append(f"  started {_when(view)}, ended {ended}")
    lines.append(f"  call {record.call_digest} ({record.rerun.call_file})")
    if record.trace_file is not None:
        lines.append(f"  trace {record.trace_file}")
    if record.driver is not None:
        state = {True: "running", False: "gone", None: "not checked"}[view.driver_alive]
        if record.ended:
            state = "finished"
        lines.append(f"  driven by pid {record.driver.pid} ({state})")
    for run in record.runs:
        code = f" {run.error_code}" if run.error_code else ""
        lines.append(f"  {run.key:<14} {run.agent:<16} {run.status}{code}")
    if record.summary:
        lines.append(f"  {record.summary}")
    if record.error is not None:
        lines.append(f"  error {record.error.code}: {record.error.message}")
    following = record.next_command(shown)
    if following is not None:
        lines.append(f"  {following[0]}: {following[1]}")
    return lines


def list_line(view: RunView) -> str:
    record = view.record
    settled = sum(run.status != "running" for run in record.runs)
    return (
        f"{record.run_id}  {record.mode:<12} {view.status!s:<11} {_when(view)}  "
        f"{settled}/{len(record.runs)} runs settled"
    )


def show_runs(args: argparse.Namespace, container: CliContainer | ReadingContainer) -> int:
    """``flow status``/``flow list``; ``FlowError`` (``FLOW_RUN_NOT_FOUND``) for the caller."""
    journal = container.flow_journal()
    if args.action == "status":
        view = journal.find(args.run_id)
        if args.json:
            emit_json(view.document())
        else:
            print("\n".join(status_lines(view)))
        return EXIT_OK
    listing = journal.listing()
    if args.json:
        emit_json(
            {
                "runs": [view.document() for view in listing.views],
                "unreadable": [{"runId": i, "reason": why} for i, why in listing.unreadable],
            }
        )
        return EXIT_OK
    if not listing.views:
        print("no flow runs recorded yet (every spawning `pi-squad flow` call leaves one)")
    for view in listing.views:
        print(list_line(view))
    for run_id, why in listing.unreadable:
        print(f"{run_id}  unreadable: {why}")
    return EXIT_OK
