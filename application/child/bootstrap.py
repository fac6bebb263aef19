"""What a spec child's Pi is told before each agent run: the task, the canonical spec, and
which chunks it must still read (contract §6)."""

from __future__ import annotations

from application.canonical import CanonicalIntegrityError, CanonicalReader
from application.spec_reads import AttestationStatus, TaskReadLedger
from domain.attestation import CoverageState
from domain.child_environment import SpecChild


def bootstrap_prompt(
    child: SpecChild, canonical_reader: CanonicalReader, ledger: TaskReadLedger
) -> str:
    """The system-prompt text for ``child``, from a fresh verified read of its canonical spec."""
    head = [
        "# pi-squad file-spec task",
        f"Squad: {child.squad_id}",
        f"Task: {child.task_id}",
        f"Canonical spec: {child.spec_bytes} bytes, SHA-256 {child.spec_sha256}",
    ]
    try:
        canonical = canonical_reader.read()
        coverage = ledger.current(canonical)
        attested = ledger.attestation_verdict(canonical).status is AttestationStatus.VALID
    except CanonicalIntegrityError as exc:
        return "\n".join(
            [
                *head,
                f"The canonical spec failed verification ({exc.reason}).",
                "Every tool is blocked. Stop and report this to the orchestrator.",
            ]
        )
    count = canonical.table.chunk_count
    head.append(f"Chunks: {count} (at most {canonical.table.chunk_bytes} bytes each)")
    if coverage.state is CoverageState.INVALID:
        return "\n".join(
            [
                *head,
                f"Read coverage is invalid ({coverage.invalid_reason}).",
                "Every tool except squad_spec_read is blocked. Report this to the orchestrator.",
            ]
        )
    if attested and coverage.state is CoverageState.COMPLETE:
        return "\n".join(
            [
                *head,
                "Every chunk has been delivered and attested: all tools are available.",
                "squad-spec-missing: none",
            ]
        )
    missing = coverage.missing_indices()
    listed = ", ".join(str(i) for i in missing)
    return "\n".join(
        [
            *head,
            "Before any other tool, read every chunk of the canonical spec with "
            'squad_spec_read {"index": N}. Any order works, and several reads may go in one '
            "message. Other tools stay blocked until every chunk has been delivered.",
            f"Missing chunk indices: [{listed}]",
            f"squad-spec-chunks: {count}",
            f"squad-spec-missing: {','.join(str(i) for i in missing)}",
        ]
    )
