"""The evidence report as Markdown (``pi-squad report``'s default format); its last line is the
verdict."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from application.spec_reads import AttestationStatus
from application.squads.documents import optional_timestamp
from application.squads.report import SquadReport, TaskEvidence
from application.squads.status import format_elapsed
from domain.attestation.timestamps import format_rfc3339_millis
from domain.isolation import isolation_statement
from domain.squad.model import Review, Task, TaskStatus
from entrypoints.report_outputs import OutputFile, OutputPlacement, utf8_bytes


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
            return "Attestation audit: PASS: legacy squad, no attestation is required"
        return (
            f"Attestation audit: PASS: all {report.required_count} required attestations "
            "verify now against the canonical spec"
        )
    count = len(report.problems)
    noun = "problem" if count == 1 else "problems"
    return f"Attestation audit: FAIL: {count} {noun}: {'; '.join(report.problems)}"


def outcome_line(report: SquadReport) -> str:
    """The squad's own outcome and review state, which the attestation audit does not judge."""
    squad = report.squad
    review = "none" if squad.review is None else str(squad.review.status)
    if squad.review is not None and squad.review.verdict is not None:
        review += f" ({squad.review.verdict})"
    return f"Squad outcome (not judged by the audit): status {squad.status}, review {review}"


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
            f"first delivered {optional_timestamp(summary.first_delivered_at)}, "
            f"last delivered {optional_timestamp(summary.last_delivered_at)}, "
            f"completed {optional_timestamp(summary.completed_at)}",
            "- Tool-call IDs (by chunk index):",
        ]
        lines.extend(
            f"  - {index}: `{tool_call_id}`"
            for index, tool_call_id in enumerate(summary.tool_call_ids)
        )
        return lines
    return [f"- Attestation: {item.word.text}"]


def _output_lines(placement: OutputPlacement) -> list[str]:
    if placement is None:
        return ["Output: none", ""]
    if isinstance(placement, OutputFile):
        return [
            f"Output: {placement.bytes} bytes, SHA-256 {placement.sha256}, written whole to "
            f"`{placement.path}`",
            "",
        ]
    data = utf8_bytes(placement.text)
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
        timing = f"- Started: {optional_timestamp(task.started)}"
        if task.completed is not None:
            timing += f"; completed: {optional_timestamp(task.completed)} (took {_elapsed(task)})"
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
            f"- Isolation: {isolation_statement(squad.isolation, squad.isolation_layers)}",
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
    lines += ["## Attestation audit", "", outcome_line(report), ""]
    if report.problems:
        lines += [f"- {problem}" for problem in report.problems] + [""]
    lines.append(verdict_line(report))
    return "\n".join(lines) + "\n"
