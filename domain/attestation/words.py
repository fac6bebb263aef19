"""The words every face shows for a task's proof of reading, decided in one place.

The widget, ``/squad status``, ``pi-squad status``, ``watch``, ``verify``, ``report`` and the
demo's stream all show what :func:`attestation_word` returns, so that no face can say
``invalid`` of a task that simply has not finished reading. The auditor's verdict
(:class:`AttestationStatus`) answers "does an attestation verify now?"; the word answers
"what is true of this task's read?":

- ``not required``: a legacy squad's task, or a cancelled one (excluded from completion);
- ``not started``: no chunk committed yet;
- ``reading n/N``: some chunks committed, the read not finished (or finished but not yet
  confirmed by the parent: a task that is not done is judged at settlement, not before);
- ``valid``: the attestation verifies and is grounded in what the parent observed;
- ``invalid: <reason>``: a done task without a verifying attestation, or a finished read whose
  attestation fails its checks. Always with its reason.
"""

from __future__ import annotations

import enum

import attrs

from domain.attestation.verdict import AttestationStatus
from domain.squad.model import TaskStatus


class ReadWord(enum.StrEnum):
    NOT_REQUIRED = "not required"
    NOT_STARTED = "not started"
    READING = "reading"
    VALID = "valid"
    INVALID = "invalid"


@attrs.frozen
class AttestationWord:
    """What is true of one task's read, in the words every face shows."""

    word: ReadWord
    chunks_read: int | None = None
    """Chunks committed (``None``: the progress record could not be counted)."""
    chunk_count: int | None = None
    reason: str | None = None
    """Why ``invalid`` (always set then); ``None`` for every other word."""

    @property
    def text(self) -> str:
        """``not started``, ``reading 2/4``, ``valid``, ``invalid: <reason>``, ``not required``."""
        if self.word is ReadWord.READING:
            read = "?" if self.chunks_read is None else str(self.chunks_read)
            return f"reading {read}/{self.chunk_count}"
        if self.word is ReadWord.INVALID:
            return f"invalid: {self.reason}"
        return str(self.word)

    @property
    def alarm(self) -> bool:
        return self.word is ReadWord.INVALID


NOT_REQUIRED_WORD = AttestationWord(ReadWord.NOT_REQUIRED)
UNREADABLE_CANONICAL = "the canonical spec fails verification"
NO_ATTESTATION = "the task is done but has no attestation (its read never completed)"


def attestation_word(
    task_status: TaskStatus,
    *,
    spec_squad: bool,
    verdict: AttestationStatus | None,
    reason: str | None = None,
    ungrounded: bool = False,
    chunks_read: int | None = None,
    chunk_count: int | None = None,
) -> AttestationWord:
    """The word for a task in ``task_status`` whose attestation the auditor judged ``verdict``
    (``None``: not judged, because the canonical spec failed verification; ``reason`` then says
    why). ``ungrounded``: a well-formed attestation the parent has not seen earned (for a task
    still running, its session or deliveries may simply not be recorded yet)."""
    if (
        not spec_squad
        or task_status is TaskStatus.CANCELLED
        or verdict is AttestationStatus.NOT_REQUIRED
    ):
        return NOT_REQUIRED_WORD
    if verdict is AttestationStatus.VALID:
        return AttestationWord(ReadWord.VALID, chunk_count, chunk_count)
    finished_read = verdict is AttestationStatus.INVALID and not ungrounded
    if task_status is TaskStatus.DONE or finished_read:
        if verdict is None:
            why = UNREADABLE_CANONICAL if reason is None else f"{UNREADABLE_CANONICAL}: {reason}"
        elif verdict is AttestationStatus.MISSING:
            why = NO_ATTESTATION
        else:
            why = reason or "the attestation fails verification"
        return AttestationWord(ReadWord.INVALID, chunks_read, chunk_count, why)
    if chunks_read == 0:
        return AttestationWord(ReadWord.NOT_STARTED, 0, chunk_count)
    return AttestationWord(ReadWord.READING, chunks_read, chunk_count)
