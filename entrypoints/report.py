"""``pi-squad report``: the evidence pack for a reviewer, as Markdown or JSON.

The report is built read-only (``application.report``); this module renders it and, with
``--out``, writes it atomically through the ``FileSystem`` port. A task output longer than
:data:`INLINE_OUTPUT_BYTES` is then written whole beside the report, as
``<report-stem>.outputs/<task-id>.txt``, and referenced by its path (relative to the report's
directory), byte length and SHA-256. Without ``--out`` every output is inline. Nothing is ever
shortened.

Exit status: 0 when the verdict is ok (every required attestation verifies now), 1 otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, NoReturn

import attrs
from rich.console import Console
from rich.text import Text

from application.ports import FileSystem
from application.report import AttestationSummary, SquadReport, TaskEvidence
from application.spec_reads import AttestationStatus
from application.status import format_elapsed
from domain.attestation.timestamps import format_rfc3339_millis
from domain.errors import ErrorCode, SquadOperationError
from domain.isolation import isolation_statement
from domain.squad.model import Review, Task, TaskStatus
from entrypoints.children import EXTENSION_DIR
from entrypoints.container import CliContainer
from entrypoints.output import EXIT_OK, EXIT_REFUSED, emit_json
from entrypoints.watch import add_watch_command

INLINE_OUTPUT_BYTES = 8 * 1024
OUTPUTS_DIR_MODE = 0o700
FORMATS = ("md", "json")


# -- where each output goes ---------------------------------------------------------------------


@attrs.frozen
class InlineOutput:
    text: str


@attrs.frozen
class OutputFile:
    """An output written beside the report: ``path`` is relative to the report's directory."""

    path: str
    absolute_path: str
    sha256: str
    bytes: int


OutputPlacement = InlineOutput | OutputFile | None


def _output_bytes(text: str) -> bytes:
    # Lone surrogates can come out of JSON; they are kept byte-for-byte rather than dropped.
    return text.encode("utf-8", errors="surrogatepass")


def place_outputs(
    report: SquadReport, fs: FileSystem, out_path: str | None
) -> dict[str, OutputPlacement]:
    """Inline every output, except with ``out_path``: then long ones go beside the report."""
    placements: dict[str, OutputPlacement] = {}
    for item in report.tasks:
        output = item.task.output
        if output is None:
            placements[item.task.id] = None
            continue
        data = _output_bytes(output)
        if out_path is None or len(data) <= INLINE_OUTPUT_BYTES:
            placements[item.task.id] = InlineOutput(output)
            continue
        directory, name = os.path.split(out_path)
        outputs_dir_name = f"{os.path.splitext(name)[0]}.outputs"
        outputs_dir = os.path.join(directory, outputs_dir_name)
        fs.ensure_dir(outputs_dir, OUTPUTS_DIR_MODE)
        file_name = f"{item.task.id}.txt"
        absolute = os.path.join(outputs_dir, file_name)
        fs.write_atomic(absolute, data)
        placements[item.task.id] = OutputFile(
            path=f"{outputs_dir_name}/{file_name}",
            absolute_path=absolute,
            sha256=hashlib.sha256(data).hexdigest(),
            bytes=len(data),
        )
    return placements


# -- JSON ----------------------------------------------------------------------------------------


def _time(value: datetime | None) -> str | None:
    return None if value is None else format_rfc3339_millis(value)


def _output_document(placement: OutputPlacement) -> dict[str, Any] | None:
    if placement is None:
        return None
    if isinstance(placement, InlineOutput):
        return {"inline": placement.text}
    return {"path": placement.path, "sha256": placement.sha256, "bytes": placement.bytes}


def _attestation_document(summary: AttestationSummary) -> dict[str, Any]:
    return {
        "status": str(summary.status),
        "chunkCount": summary.chunk_count,
        "chunksCommitted": summary.chunks_committed,
        "firstDeliveredAt": _time(summary.first_delivered_at),
        "lastDeliveredAt": _time(summary.last_delivered_at),
        "completedAt": _time(summary.completed_at),
        "toolCallIds": list(summary.tool_call_ids),
        "missingIndices": None
        if summary.missing_indices is None
        else list(summary.missing_indices),
        "reason": summary.reason,
    }


def _task_document(
    item: TaskEvidence, placement: OutputPlacement, *, file_mode: bool
) -> dict[str, Any]:
    task = item.task
    return {
        "taskId": task.id,
        # A title is spec content in file mode; a legacy squad's title is shown as upstream does.
        "title": None if file_mode else task.title,
        "agent": task.agent,
        "status": str(task.status),
        "depends": list(task.depends),
        "started": _time(task.started),
        "completed": _time(task.completed),
        "usage": {
            "inputTokens": task.usage.input_tokens,
            "outputTokens": task.usage.output_tokens,
            "cost": task.usage.cost,
            "turns": task.usage.turns,
        },
        "error": task.error,
        "output": _output_document(placement),
        "attestationRequired": item.required,
        "attestation": _attestation_document(item.attestation),
    }


def review_full_document(review: Review) -> dict[str, Any]:
    return {
        "status": str(review.status),
        "verdict": None if review.verdict is None else str(review.verdict),
        "requestedAt": format_rfc3339_millis(review.requested_at),
        "completedAt": _time(review.completed_at),
        "contractChecks": list(review.contract_checks),
        "diffReview": review.diff_review,
        "verificationEvidence": list(review.verification_evidence),
        "integrationEvidence": review.integration_evidence,
        "issues": list(review.issues),
    }


def report_document(
    report: SquadReport, placements: Mapping[str, OutputPlacement]
) -> dict[str, Any]:
    squad = report.squad
    spec = squad.spec
    return {
        "squadId": squad.id,
        "generatedAt": format_rfc3339_millis(report.generated_at),
        "status": str(squad.status),
        "isolation": {"mode": squad.isolation, "statement": isolation_statement(squad.isolation)},
        "spec": None
        if spec is None
        else {
            "path": spec.path,
            "bytes": spec.bytes,
            "sha256": spec.sha256,
            "chunkBytes": spec.chunk_bytes,
            "chunkCount": spec.chunk_count,
            "canonical": {
                "ok": report.canonical_problem is None,
                "reason": report.canonical_problem,
            },
        },
        "tasks": [
            _task_document(item, placements.get(item.task.id), file_mode=spec is not None)
            for item in report.tasks
        ],
        "reviews": [review_full_document(review) for review in report.reviews],
        "verdict": {
            "ok": report.ok,
            "requiredAttestations": report.required_count,
            "problems": list(report.problems),
        },
    }


# -- Markdown ------------------------------------------------------------------------------------


def _fence(text: str, info: str = "text") -> list[str]:
    """A fenced block that no run of backticks inside ``text`` can close early."""
    longest = run = 0
    for character in text:
        run = run + 1 if character == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") else text + "\n"
    return [f"{fence}{info}", *body.splitlines(), fence]


def verdict_line(report: SquadReport) -> str:
    if report.ok:
        if report.squad.spec is None:
            return "Verdict: PASS: legacy squad, no attestation is required"
        return (
            f"Verdict: PASS: all {report.required_count} required attestations verify now "
            "against the canonical spec"
        )
    count = len(report.problems)
    noun = "problem" if count == 1 else "problems"
    return f"Verdict: FAIL: {count} {noun}: {'; '.join(report.problems)}"


def _elapsed(task: Task) -> str | None:
    if task.started is None or task.completed is None:
        return None
    return format_elapsed((task.completed - task.started).total_seconds())


def _attestation_lines(item: TaskEvidence) -> list[str]:
    summary = item.attestation
    if not item.required:
        return ["- Attestation: not required"]
    if summary.status is AttestationStatus.VALID:
        lines = [
            f"- Attestation: valid, {summary.chunk_count} of {summary.chunk_count} chunks, "
            f"first delivered {_time(summary.first_delivered_at)}, last delivered "
            f"{_time(summary.last_delivered_at)}, completed {_time(summary.completed_at)}",
            "- Tool-call IDs (by chunk index):",
        ]
        lines.extend(
            f"  - {index}: `{tool_call_id}`"
            for index, tool_call_id in enumerate(summary.tool_call_ids)
        )
        return lines
    line = f"- Attestation: {str(summary.status).upper()}"
    if summary.chunks_committed is not None and summary.chunk_count is not None:
        line += f", {summary.chunks_committed} of {summary.chunk_count} chunks committed"
    if summary.reason is not None:
        line += f": {summary.reason}"
    return [line]


def _output_lines(placement: OutputPlacement) -> list[str]:
    if placement is None:
        return ["Output: none", ""]
    if isinstance(placement, OutputFile):
        return [
            f"Output: {placement.bytes} bytes, SHA-256 {placement.sha256}, written whole to "
            f"`{placement.path}`",
            "",
        ]
    data = _output_bytes(placement.text)
    digest = hashlib.sha256(data).hexdigest()
    return [f"Output ({len(data)} bytes, SHA-256 {digest}):", "", *_fence(placement.text), ""]


def _task_lines(item: TaskEvidence, placement: OutputPlacement, *, file_mode: bool) -> list[str]:
    task = item.task
    lines = [f"### {task.id}", ""]
    if not file_mode:
        lines.append(f"- Title: {task.title}")
    lines += [f"- Agent: {task.agent}", f"- Status: {task.status}"]
    if task.depends:
        lines.append(f"- Depends on: {', '.join(task.depends)}")
    if task.started is not None:
        timing = f"- Started: {_time(task.started)}"
        if task.completed is not None:
            timing += f"; completed: {_time(task.completed)} (took {_elapsed(task)})"
        lines.append(timing)
    usage = task.usage
    lines.append(
        f"- Tokens: {usage.input_tokens} in, {usage.output_tokens} out; "
        f"{usage.turns} turns; cost ${usage.cost:.4f}"
    )
    if task.error:
        lines.append(f"- Error: {task.error}")
    lines += _attestation_lines(item)
    lines.append("")
    lines += _output_lines(placement)
    return lines


def _review_lines(number: int, review: Review, *, current: bool) -> list[str]:
    which = "current" if current else "earlier"
    verdict = "no verdict yet" if review.verdict is None else f"verdict {review.verdict}"
    lines = [f"### Review {number} ({which}): {review.status}, {verdict}", ""]
    timing = f"- Requested: {format_rfc3339_millis(review.requested_at)}"
    if review.completed_at is not None:
        timing += f"; completed: {format_rfc3339_millis(review.completed_at)}"
    lines.append(timing)
    for label, items in (
        ("Contract checks", review.contract_checks),
        ("Verification evidence", review.verification_evidence),
        ("Issues", review.issues),
    ):
        if items:
            lines.append(f"- {label}:")
            lines.extend(f"  - {entry}" for entry in items)
    for label, text in (
        ("Diff review", review.diff_review),
        ("Integration evidence", review.integration_evidence),
    ):
        if text:
            lines += [f"- {label}:", "", *_fence(text)]
    lines.append("")
    return lines


def render_markdown(report: SquadReport, placements: Mapping[str, OutputPlacement]) -> str:
    """The report as Markdown; its last line is :func:`verdict_line`."""
    squad = report.squad
    spec = squad.spec
    done = sum(1 for item in report.tasks if item.task.status is TaskStatus.DONE)
    lines = [
        f"# Evidence report: squad {squad.id}",
        "",
        f"- Generated: {format_rfc3339_millis(report.generated_at)}",
        f"- Squad status: {squad.status}",
        f"- Review: {'none' if squad.review is None else squad.review.status}",
        f"- Working directory: {squad.cwd}",
        f"- Tasks: {len(report.tasks)} ({done} done)",
        f"- Cost: ${sum(item.task.usage.cost for item in report.tasks):.4f}",
        "",
        "## Spec",
        "",
    ]
    if spec is None:
        lines += ["Legacy inline squad: no spec file, no attestation required.", ""]
    else:
        canonical = (
            "verifies now"
            if report.canonical_problem is None
            else f"FAILS verification now: {report.canonical_problem}"
        )
        lines += [
            f"- Path: {spec.path}",
            f"- Bytes: {spec.bytes}",
            f"- SHA-256: {spec.sha256}",
            f"- Chunks: {spec.chunk_count} (at most {spec.chunk_bytes} bytes each)",
            f"- Canonical copy: {canonical}",
            f"- Isolation: {isolation_statement(squad.isolation)}",
            "",
        ]
    lines += ["## Tasks", ""]
    for item in report.tasks:
        lines += _task_lines(item, placements.get(item.task.id), file_mode=spec is not None)
    lines += ["## Reviews", ""]
    if not report.reviews:
        lines += ["No review recorded yet.", ""]
    for number, review in enumerate(report.reviews, start=1):
        lines += _review_lines(number, review, current=review is squad.review)
    lines += ["## Verdict", ""]
    if report.problems:
        lines += [f"- {problem}" for problem in report.problems] + [""]
    lines.append(verdict_line(report))
    return "\n".join(lines) + "\n"


# -- the command ---------------------------------------------------------------------------------


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


def cmd_report(args: argparse.Namespace, container: CliContainer) -> int:
    usage: Callable[[str], NoReturn] = args.usage
    fmt: str = args.format or ("json" if args.json and args.out is None else "md")
    if args.json and args.out is None and fmt != "json":
        usage("--json prints one JSON object: use --format json, or --out FILE for Markdown")
    fs = container.fs()
    out = None if args.out is None else _resolve_out(fs, args.out)
    report = container.report_builder().build(args.squad_id)
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
        data = (text + "\n").encode("utf-8", errors="surrogatepass")
    else:
        data = render_markdown(report, placements).encode("utf-8", errors="surrogatepass")
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
        _print_verdict(verdict_line(report), report.ok)
    return exit_code


AddCommand = Callable[
    [str, Callable[[argparse.Namespace, CliContainer], int], str], argparse.ArgumentParser
]


def add_report_command(add: AddCommand) -> None:
    report = add(
        "report",
        cmd_report,
        "Write the evidence pack for a reviewer: spec identity, every task's status, complete "
        "output and attestation, the review history, and a verdict computed now. Exits 1 when "
        "a required attestation does not verify.",
    )
    report.add_argument("squad_id", metavar="SQUAD_ID")
    report.add_argument("--format", choices=FORMATS, help="md (default) or json")
    report.add_argument(
        "--out",
        metavar="FILE",
        help="write the report here (atomically); outputs over 8 KiB go to <stem>.outputs/",
    )
    report.set_defaults(usage=report.error)


def cmd_extension_path(args: argparse.Namespace, container: CliContainer) -> int:
    manifest = os.path.join(EXTENSION_DIR, "package.json")
    if not os.path.isfile(manifest):
        raise SquadOperationError(
            ErrorCode.RUNTIME_UNAVAILABLE,
            f"the Pi package is missing: {manifest} does not exist; reinstall pi-squad "
            "(uv sync in a checkout) so that entrypoints/pi/ is present",
        )
    if args.json:
        emit_json({"path": EXTENSION_DIR})
    else:
        print(EXTENSION_DIR)
    return EXIT_OK


def add_operator_commands(add: AddCommand) -> None:
    """``report``, ``watch`` and ``extension-path``: what a person uses around a squad."""
    add_report_command(add)
    add_watch_command(add)
    add(
        "extension-path",
        cmd_extension_path,
        "Print the directory of pi-squad's Pi package, for `pi -e <path>` or an entry in "
        "Pi's `packages` setting.",
    )
