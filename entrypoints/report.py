"""``pi-squad report``: the evidence pack for a reviewer, as Markdown or JSON.

The report is built read-only (``application.squads.report``) and rendered by
``entrypoints.report_markdown`` or ``entrypoints.report_json``; with ``--out`` it is written
atomically through the ``FileSystem`` port, and a task output longer than
:data:`~entrypoints.report_outputs.INLINE_OUTPUT_BYTES` is then written whole beside it, as
``<report-stem>.outputs/<task-id>.txt``, and referenced by its path (relative to the report's
directory), byte length and SHA-256. Without ``--out`` every output is inline. Nothing is ever
shortened.

Exit status: 0 when the verdict is ok (every required attestation verifies now), 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import NoReturn

from rich.console import Console
from rich.text import Text

from application.ports import FileSystem, Store
from application.squads.report import ReportBuilder
from application.squads.squad_commands import EvidencePack
from domain.errors import ErrorCode, SquadOperationError
from entrypoints.commands import AddCommand
from entrypoints.container import CliContainer
from entrypoints.output import EXIT_OK, EXIT_REFUSED, emit_json
from entrypoints.report_json import report_document
from entrypoints.report_markdown import outcome_line, render_markdown, verdict_line
from entrypoints.report_outputs import OutputFile, place_outputs, utf8_bytes

FORMATS = ("md", "json")


def _print_verdict(line: str, ok: bool) -> None:
    """The verdict line; green or red on a terminal, plain otherwise."""
    if sys.stdout.isatty():
        console = Console(highlight=False, soft_wrap=True)
        console.print(Text(line, style="bold green" if ok else "bold red"))
    else:
        print(line, flush=True)


def _write_report(fs: FileSystem, path: str, data: bytes) -> None:
    try:
        fs.write_atomic(path, data)
    except OSError as exc:
        raise SquadOperationError(
            ErrorCode.OPERATION_REFUSED,
            f"cannot write the report to {path}: {exc.strerror or exc}; choose a writable "
            "--out path",
        ) from None


def _resolve_out(fs: FileSystem, out: str) -> str:
    path = os.path.abspath(out)
    parent = os.path.dirname(path)
    if not fs.is_dir(parent):
        raise SquadOperationError(
            ErrorCode.OPERATION_REFUSED,
            f"--out {path}: the directory {parent} does not exist; create it first or choose "
            "another --out path",
        )
    if fs.is_dir(path):
        raise SquadOperationError(
            ErrorCode.OPERATION_REFUSED,
            f"--out {path} is a directory; give a file name such as {path}/report.md",
        )
    return path


def write_evidence_pack(
    builder: ReportBuilder, fs: FileSystem, store: Store, squad_id: str
) -> EvidencePack:
    """``/squad report``: the Markdown evidence pack in the squad's ``.report/`` directory
    (parent-owned, like every record there), its outputs beside it."""
    report = builder.build(squad_id)
    out = store.layout(squad_id).report_file
    fs.ensure_dir(os.path.dirname(out), 0o700)
    try:
        placements = place_outputs(report, fs, out)
    except OSError as exc:
        raise SquadOperationError(
            ErrorCode.OPERATION_REFUSED,
            f"cannot write task outputs beside {out}: {exc.strerror or exc}",
        ) from None
    _write_report(fs, out, utf8_bytes(render_markdown(report, placements)))
    return EvidencePack(path=out, audit_passed=report.ok, problems=tuple(report.problems))


def cmd_report(args: argparse.Namespace, container: CliContainer) -> int:
    usage: Callable[[str], NoReturn] = args.usage
    fmt: str = args.format or ("json" if args.json and args.out is None else "md")
    if args.json and args.out is None and fmt != "json":
        usage("--json prints one JSON object: use --format json, or --out FILE for Markdown")
    fs = container.fs()
    out = None if args.out is None else _resolve_out(fs, args.out)
    squad_id = args.squad_id or container.status_reader().newest_squad_id()
    report = container.report_builder().build(squad_id)
    exit_code = EXIT_OK if report.ok else EXIT_REFUSED
    if out is None:
        placements = place_outputs(report, fs, None)
        if fmt == "json":
            emit_json(report_document(report, placements))
            return exit_code
        markdown = render_markdown(report, placements)
        body, _, _ = markdown.rstrip("\n").rpartition("\n")
        sys.stdout.write(body + "\n")
        sys.stdout.flush()
        _print_verdict(verdict_line(report), report.ok)
        return exit_code
    try:
        placements = place_outputs(report, fs, out)
    except OSError as exc:
        raise SquadOperationError(
            ErrorCode.OPERATION_REFUSED,
            f"cannot write task outputs beside {out}: {exc.strerror or exc}; choose a writable "
            "--out path",
        ) from None
    if fmt == "json":
        text = json.dumps(report_document(report, placements), indent=2, ensure_ascii=False)
        data = utf8_bytes(text + "\n")
    else:
        data = utf8_bytes(render_markdown(report, placements))
    _write_report(fs, out, data)
    files = [p for p in placements.values() if isinstance(p, OutputFile)]
    if args.json:
        emit_json(
            {
                "path": out,
                "format": fmt,
                "squadId": report.squad.id,
                "verdict": {"ok": report.ok, "problems": list(report.problems)},
                "outputs": [
                    {"path": f.absolute_path, "sha256": f.sha256, "bytes": f.bytes} for f in files
                ],
            }
        )
    else:
        print(out)
        for f in files:
            print(f"  output {f.absolute_path} ({f.bytes} bytes, SHA-256 {f.sha256})")
        print(outcome_line(report))
        _print_verdict(verdict_line(report), report.ok)
    return exit_code


def add_report_command(add: AddCommand) -> None:
    report = add(
        "report",
        cmd_report,
        "Write the evidence pack for a reviewer: spec identity, every task's status, complete "
        "output and attestation, the review history, and a verdict computed now. Exits 1 when "
        "a required attestation does not verify. Without SQUAD_ID, the newest squad.",
    )
    report.add_argument("squad_id", metavar="SQUAD_ID", nargs="?")
    report.add_argument("--format", choices=FORMATS, help="md (default) or json")
    report.add_argument(
        "--out",
        metavar="FILE",
        help="write the report here (atomically); outputs over 8 KiB go to <stem>.outputs/",
    )
    report.set_defaults(usage=report.error)
