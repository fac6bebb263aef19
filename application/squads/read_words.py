"""The auditor's check of one task, put in the words every face shows
(``domain/attestation/words.py`` decides them)."""

from __future__ import annotations

from application.spec_reads import AttestationCheck, AttestationStatus
from domain.attestation.words import AttestationWord, attestation_word
from domain.squad.model import Squad, Task


def task_word(
    squad: Squad, task: Task, check: AttestationCheck | None, *, canonical_problem: str | None
) -> AttestationWord:
    """``check``: the auditor's verdict on ``task``, ``None`` when the canonical spec failed
    verification (``canonical_problem`` says why) and no task was judged."""
    count = None if squad.spec is None else squad.spec.chunk_count
    if check is None:
        return attestation_word(
            task.status,
            spec_squad=squad.spec is not None,
            verdict=None,
            reason=canonical_problem,
            chunk_count=count,
        )
    if check.status is AttestationStatus.VALID or check.ungrounded:
        read: int | None = count  # an attestation lists every chunk
    elif check.missing_indices is None or count is None:
        read = None
    else:
        read = count - len(check.missing_indices)
    return attestation_word(
        task.status,
        spec_squad=squad.spec is not None,
        verdict=check.status,
        reason=check.reason,
        ungrounded=check.ungrounded,
        chunks_read=read,
        chunk_count=count,
    )
