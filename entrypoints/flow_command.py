"""``pi-squad flow``: run one flow call headless, or show the runs kept of earlier ones
(docs/flows.md, "Flow runs after the call").

``flow status [ID] [--json]`` shows one recorded run (the newest without an ID, a unique
prefix will do; an unknown one is ``FLOW_RUN_NOT_FOUND``), ``flow list [--json]`` every one,
newest first: a run whose driving process is gone without an end is ``interrupted``, with the
command that re-runs (a ``workflow``: resumes) it. Exit 0, 1 for an unknown ID.

``--call FILE`` or ``--call -`` (standard input) holds one JSON call. With ``--json`` stdout is
exactly one JSON object: the flow (``flowId``, ``mode``, ``status``, ``results``...), or
``{"error": {...}}`` for a refused call. Exit 0 when the flow completed, 1 when it was refused
or a run failed (the flow object then carries ``error``: the first failed run's), 2 for usage.
Without ``--json`` each run's start and end go to stderr as they happen, and the flow's
summary and outputs to stdout. Ctrl+C cancels the flow: every live child is stopped, nothing
more spawns, and the partial results are printed (status ``cancelled``, exit 1).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn, cast

from domain.flows.errors import FlowError
from entrypoints.output import EXIT_REFUSED, emit_json

if TYPE_CHECKING:
    from entrypoints.commands import AddCommand
    from entrypoints.container import CliContainer
    from entrypoints.reading_container import ReadingContainer


def refused_exit(error: FlowError, as_json: bool) -> int:
    if as_json:
        emit_json({"error": error.document()})
    else:
        sys.stderr.write(f"pi-squad: {error.code}: {error.message}\n")
        advice = error.document()
        sys.stderr.write(f"  cause: {advice['cause']}\n  fix: {advice['fix']}\n")
    return EXIT_REFUSED


def cmd_flow(args: argparse.Namespace, container: CliContainer | ReadingContainer) -> int:
    """``status``/``list`` are given the reading container (``entrypoints.cli``'s
    ``FLOW_READS``), a call the full one; a test may pass a full one for either."""
    usage: Callable[[str], NoReturn] = args.usage
    if args.action is not None:
        if args.call is not None:
            usage(f"flow {args.action} takes no --call: a call runs as `pi-squad flow --call FILE`")
        from entrypoints.flow_runs import show_runs  # noqa: PLC0415 - only these commands

        if args.action == "list" and args.run_id is not None:
            usage("flow list takes no ID: `pi-squad flow status ID` shows one run")
        try:
            return show_runs(args, container)
        except FlowError as error:
            return refused_exit(error, args.json)
    if args.call is None:
        usage("give --call FILE (a JSON call; - for stdin), or `flow status [ID]`, `flow list`")
    if args.run_id is not None:
        usage(f"unexpected argument {args.run_id!r}: did you mean `flow status {args.run_id}`?")
    from entrypoints.flow import run_call  # noqa: PLC0415 - only a call loads the runner

    return run_call(args, cast("CliContainer", container))


def add_flow_commands(add: AddCommand) -> None:
    flow = add(
        "flow",
        cmd_flow,
        'Run one flow call: one mode (docs/flows.md, "Modes") or a preset; `flow status [ID]` '
        "and `flow list` show the runs recorded of earlier calls.",
    )
    flow.add_argument(
        "action",
        nargs="?",
        choices=["status", "list"],
        help="status [ID]: one recorded run (the newest without ID); list: every one",
    )
    flow.add_argument("run_id", nargs="?", metavar="ID", help="a run id, or a unique prefix")
    flow.add_argument("--call", metavar="FILE", help="the JSON call; - for stdin")
    flow.add_argument("--cwd", metavar="DIR", help="the flow's working directory")
    flow.add_argument("--provider", help="Pi provider for the children (default PI_SQUAD_PROVIDER)")
    flow.add_argument("--model", help="the session model: tier capable and the last fallback")
    flow.set_defaults(usage=flow.error)
