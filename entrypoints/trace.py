"""``pi-squad trace report FILE [--strict] [--json]``: read a flow trace back (docs/flows.md
"Traces").

Prints, per flow mode and ``traceLabel``, execution success apart from verified outcome
success, elapsed / worker / critical-path time, and the trace's health. With ``--json`` stdout
is one object (``domain.flows.trace_report.TraceReport.document``). Exit 0 when the report
was made; with ``--strict``, 1 when the evidence is incomplete (a run's spans missing, even
after a successful write, failed exports, a row that is not a span, no run at all); 1 when
the file cannot be read (``TRACE_INCOMPLETE``); 2 for usage.
"""

from __future__ import annotations

import argparse
import os
import sys

from application.flows.trace_report import read_trace_report
from domain.flows.errors import FlowError
from entrypoints.commands import AddCommand
from entrypoints.container import CliContainer
from entrypoints.output import EXIT_OK, EXIT_REFUSED, emit_json


def cmd_trace(args: argparse.Namespace, container: CliContainer) -> int:
    try:
        found = read_trace_report(container.fs(), args.file, cwd=os.getcwd())
    except FlowError as error:
        if args.json:
            emit_json({"error": error.document()})
        else:
            sys.stderr.write(f"pi-squad: {error.code}: {error.message}\n")
        return EXIT_REFUSED
    if args.json:
        emit_json({"file": args.file, "strict": args.strict, **found.document()})
    else:
        print("\n".join(found.lines()))
    return EXIT_REFUSED if args.strict and not found.complete else EXIT_OK


def add_trace_commands(add: AddCommand) -> None:
    trace = add("trace", cmd_trace, "Read a flow trace file back: trace report FILE.")
    trace.add_argument("action", choices=["report"], help="what to do with the trace")
    trace.add_argument("file", metavar="FILE", help="the JSON-lines trace file")
    trace.add_argument(
        "--strict", action="store_true", help="exit 1 when the trace's evidence is incomplete"
    )
