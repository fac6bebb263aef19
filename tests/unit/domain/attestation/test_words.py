"""The attestation words every face shows, over every task state: ``invalid`` only for a done
task or a finished read that fails, always with its reason; ``reading n/N`` or ``not started``
while the read is under way."""

from __future__ import annotations

import pytest

from domain.attestation.verdict import AttestationStatus
from domain.attestation.words import (
    NO_ATTESTATION,
    UNREADABLE_CANONICAL,
    AttestationWord,
    ReadWord,
    attestation_word,
)
from domain.squad.model import TaskStatus

COUNT = 4
NOT_DONE = [s for s in TaskStatus if s not in {TaskStatus.DONE, TaskStatus.CANCELLED}]
ACTIVE = [s for s in TaskStatus if s is not TaskStatus.CANCELLED]


def word(
    status: TaskStatus,
    verdict: AttestationStatus | None,
    *,
    reason: str | None = None,
    ungrounded: bool = False,
    chunks_read: int | None = None,
) -> AttestationWord:
    return attestation_word(
        status,
        spec_squad=True,
        verdict=verdict,
        reason=reason,
        ungrounded=ungrounded,
        chunks_read=chunks_read,
        chunk_count=COUNT,
    )


@pytest.mark.parametrize("status", list(TaskStatus))
@pytest.mark.parametrize("verdict", [*AttestationStatus, None])
def test_a_legacy_squads_task_needs_no_attestation_in_any_state(
    status: TaskStatus, verdict: AttestationStatus | None
) -> None:
    shown = attestation_word(status, spec_squad=False, verdict=verdict)
    assert shown.text == "not required"


@pytest.mark.parametrize("verdict", [*AttestationStatus, None])
def test_a_cancelled_task_needs_no_attestation_whatever_its_ledger_says(
    verdict: AttestationStatus | None,
) -> None:
    assert word(TaskStatus.CANCELLED, verdict, reason="x", chunks_read=2).text == "not required"


@pytest.mark.parametrize("status", ACTIVE)
def test_a_verifying_attestation_is_valid_in_every_state(status: TaskStatus) -> None:
    shown = word(status, AttestationStatus.VALID, chunks_read=COUNT)
    assert (shown.word, shown.text, shown.chunks_read) == (ReadWord.VALID, "valid", COUNT)


@pytest.mark.parametrize("status", NOT_DONE)
def test_a_task_with_no_chunk_committed_has_not_started(status: TaskStatus) -> None:
    shown = word(
        status, AttestationStatus.MISSING, reason="attestation file missing", chunks_read=0
    )
    assert shown.text == "not started"
    assert not shown.alarm


@pytest.mark.parametrize("status", NOT_DONE)
def test_a_task_part_way_through_its_read_is_reading(status: TaskStatus) -> None:
    shown = word(
        status, AttestationStatus.MISSING, reason="attestation file missing", chunks_read=2
    )
    assert shown.text == "reading 2/4"
    assert shown.reason is None


@pytest.mark.parametrize("status", NOT_DONE)
def test_a_finished_read_the_parent_has_not_yet_seen_earned_is_still_reading(
    status: TaskStatus,
) -> None:
    """The false alarm of issue 31: a child that committed every chunk before its session was
    bound (or that was suspended before then) is not invalid; it is judged at settlement."""
    shown = word(
        status,
        AttestationStatus.INVALID,
        reason="attestation is not grounded in what the parent observed: the task has no "
        "bound session, so no delivery can be attributed to it",
        ungrounded=True,
        chunks_read=COUNT,
    )
    assert shown.text == "reading 4/4"


@pytest.mark.parametrize("status", NOT_DONE)
def test_progress_that_cannot_be_counted_is_reading_with_an_unknown_count(
    status: TaskStatus,
) -> None:
    assert word(status, AttestationStatus.MISSING, chunks_read=None).text == "reading ?/4"


@pytest.mark.parametrize("status", NOT_DONE)
def test_an_unfinished_read_under_a_failing_canonical_spec_is_not_called_invalid(
    status: TaskStatus,
) -> None:
    assert word(status, None, reason="length 3 != 114219").text == "reading ?/4"


@pytest.mark.parametrize("status", ACTIVE)
def test_a_finished_read_whose_attestation_fails_is_invalid_with_its_reason(
    status: TaskStatus,
) -> None:
    reason = "attestation.completedAt is earlier than chunks[0].deliveredAt"
    shown = word(status, AttestationStatus.INVALID, reason=reason, chunks_read=None)
    assert shown.text == f"invalid: {reason}"
    assert shown.alarm


def test_a_done_task_without_an_attestation_is_invalid_and_says_why() -> None:
    shown = word(TaskStatus.DONE, AttestationStatus.MISSING, reason="x", chunks_read=3)
    assert shown.text == f"invalid: {NO_ATTESTATION}"


def test_a_done_task_whose_attestation_the_parent_never_saw_earned_is_invalid() -> None:
    reason = "attestation is not grounded in what the parent observed: no spawn"
    shown = word(TaskStatus.DONE, AttestationStatus.INVALID, reason=reason, ungrounded=True)
    assert shown.text == f"invalid: {reason}"


def test_a_done_task_under_a_failing_canonical_spec_is_invalid_naming_the_spec() -> None:
    shown = word(TaskStatus.DONE, None, reason="length 3 != 114219")
    assert shown.text == f"invalid: {UNREADABLE_CANONICAL}: length 3 != 114219"


@pytest.mark.parametrize("status", list(TaskStatus))
@pytest.mark.parametrize("verdict", [*AttestationStatus, None])
@pytest.mark.parametrize("ungrounded", [False, True])
@pytest.mark.parametrize("chunks_read", [None, 0, 2, COUNT])
def test_invalid_is_never_shown_without_its_reason(
    status: TaskStatus, verdict: AttestationStatus | None, ungrounded: bool, chunks_read: int | None
) -> None:
    shown = word(status, verdict, ungrounded=ungrounded, chunks_read=chunks_read)
    if shown.word is ReadWord.INVALID:
        assert shown.reason
        assert shown.text.startswith("invalid: ")
    else:
        assert shown.reason is None
