"""The evidence report as one JSON document (``pi-squad report --format json``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from application.squads.documents import isolation_document, optional_timestamp, review_document
from application.squads.report import AttestationSummary, SquadReport, TaskEvidence
from domain.attestation.timestamps import format_rfc3339_millis
from entrypoints.report_outputs import InlineOutput, OutputPlacement


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
        "firstDeliveredAt": optional_timestamp(summary.first_delivered_at),
        "lastDeliveredAt": optional_timestamp(summary.last_delivered_at),
        "completedAt": optional_timestamp(summary.completed_at),
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
        "started": optional_timestamp(task.started),
        "completed": optional_timestamp(task.completed),
        "usage": {
            "inputTokens": task.usage.input_tokens,
            "outputTokens": task.usage.output_tokens,
            "cost": task.usage.cost,
            "turns": task.usage.turns,
        },
        "error": task.error,
        "output": _output_document(placement),
        "attestationRequired": item.required,
        "attestation": {
            **_attestation_document(item.attestation),
            "state": str(item.word.word),
            "text": item.word.text,
        },
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
        "isolation": isolation_document(squad.isolation, squad.isolation_layers),
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
        "reviews": [review_document(review, with_evidence=True) for review in report.reviews],
        "verdict": {
            "ok": report.ok,
            "requiredAttestations": report.required_count,
            "problems": list(report.problems),
        },
    }
