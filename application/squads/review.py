"""The orchestrator's review of a squad (upstream ``squad_review``, contract §10.4).

A squad whose non-cancelled tasks are all done waits in ``review`` with a pending review. Before
any verdict is recorded, the canonical bytes and every required attestation (each non-cancelled
done task of a file squad) are revalidated with ``validate_task_attestation``; on any failure the
review is rejected and the affected work is reopened (descendants re-blocked, the squad back to
running, the review into history), so a stale pending review can never bypass recovery.

``pass`` and ``pass_with_issues`` accept the squad (``done``); ``fail`` leaves it in review with
a failed review that cannot be overwritten: rework is added to the same squad with ``add_task``
(usually with ``forkFromTask``), which archives the failed review, and a fresh pending review
follows when the work is done again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs

from application.attestation_check import AttestationAuditor
from application.canonical import CanonicalIntegrityError, CanonicalSpec
from application.ports import Clock, Ids, SquadTransaction, Store
from application.squads.squad_state import begin_rework, reopen_with_descendants
from domain.errors import ErrorCode, SquadOperationError
from domain.input_errors import InputRejected
from domain.inputs import parse_input
from domain.squad.model import Review, ReviewStatus, Squad, SquadStatus, TaskStatus, Verdict
from domain.squad.transitions import move_squad

ATTESTATION_REOPEN_PREFIX = "Completion rejected: review found no valid spec-read attestation"


@attrs.frozen
class ReviewEvidence:
    """The verdict and its evidence, as the orchestrator gives them or trimmed
    (:meth:`trimmed`); emptiness is judged after trimming, by :meth:`problem`, once every
    attestation was revalidated (§10.4)."""

    verdict: Verdict
    contract_checks: tuple[str, ...]
    diff_review: str
    verification_evidence: tuple[str, ...]
    integration_evidence: str
    issues: tuple[str, ...] = ()

    def trimmed(self) -> ReviewEvidence:
        """Every text stripped and every list without its blank entries."""
        return ReviewEvidence(
            verdict=self.verdict,
            contract_checks=_clean(self.contract_checks),
            diff_review=self.diff_review.strip(),
            verification_evidence=_clean(self.verification_evidence),
            integration_evidence=self.integration_evidence.strip(),
            issues=_clean(self.issues),
        )

    def problems(self) -> tuple[tuple[str, str], ...]:
        """Every missing piece of evidence at once, after trimming: ``(field, what is
        missing)`` in the schema's order (upstream ``recordOrchestratorReview``'s rules)."""
        found: list[tuple[str, str]] = []
        if not self.contract_checks:
            found.append(("contractChecks", "at least one non-empty contract check"))
        if not self.diff_review:
            found.append(("diffReview", "a non-empty summary of the reviewed diff"))
        if not self.verification_evidence:
            found.append(("verificationEvidence", "at least one non-empty piece of evidence"))
        if not self.integration_evidence:
            found.append(("integrationEvidence", "non-empty integration evidence"))
        if self.verdict is not Verdict.PASS and not self.issues:
            found.append(("issues", f"at least one non-empty issue (verdict {self.verdict})"))
        return tuple(found)

    def problem(self, names: Mapping[str, str] | None = None) -> str | None:
        """All :meth:`problems` in one sentence; ``names`` renames the fields (the CLI's
        flags)."""
        found = self.problems()
        if not found:
            return None
        renamed = names or {}
        return "missing " + "; ".join(f"{renamed.get(f, f)}: {what}" for f, what in found)


@attrs.frozen
class ReviewCall(ReviewEvidence):
    """``squad-review-call.schema.json`` as a value: the evidence as given, and which squad
    (``squad_review``'s input; ``pi-squad review`` builds the same document from its
    options)."""

    squad_id: str | None = None


def parse_review_call(document: Mapping[str, Any]) -> ReviewCall:
    """Review input through the one input path; ``REVIEW_INVALID`` naming each bad field."""
    try:
        return parse_input("squad-review-call", dict(document), ReviewCall)
    except InputRejected as exc:
        raise SquadOperationError(
            ErrorCode.REVIEW_INVALID, f"Review rejected: {'; '.join(exc.problems)}"
        ) from None


def _parse_verdict(verdict: Verdict | str) -> Verdict:
    try:
        return Verdict(verdict)
    except ValueError:
        allowed = ", ".join(v.value for v in Verdict)
        raise SquadOperationError(
            ErrorCode.REVIEW_INVALID,
            f"Review rejected: verdict must be one of {allowed}",
        ) from None


def _clean(items: Sequence[str]) -> tuple[str, ...]:
    return tuple(stripped for item in items if (stripped := item.strip()))


@attrs.frozen
class ReviewOutcome:
    squad_id: str
    verdict: Verdict
    squad_status: SquadStatus
    review: Review
    text: str


@attrs.frozen
class ReviewRecorder:
    _store: Store
    _auditor: AttestationAuditor
    _clock: Clock
    _ids: Ids

    def record_review(
        self,
        squad_id: str,
        verdict: Verdict | str,
        *,
        contract_checks: Sequence[str],
        diff_review: str,
        verification_evidence: Sequence[str],
        integration_evidence: str,
        issues: Sequence[str] = (),
    ) -> ReviewOutcome:
        """:meth:`record_call` of the evidence given as arguments."""
        given = ReviewEvidence(
            verdict=_parse_verdict(verdict),
            contract_checks=tuple(contract_checks),
            diff_review=diff_review,
            verification_evidence=tuple(verification_evidence),
            integration_evidence=integration_evidence,
            issues=tuple(issues),
        )
        return self.record_call(squad_id, given)

    def mark_notified(self, squad_id: str) -> bool:
        """Record that the pending review's gate reached the orchestrator's session
        (``review.notifiedAt``); ``False`` when there is no pending, unnotified review."""
        with self._store.transaction(squad_id) as tx:
            squad = tx.squad
            review = squad.review
            if (
                squad.status is not SquadStatus.REVIEW
                or review is None
                or review.status is not ReviewStatus.PENDING
                or review.notified_at is not None
            ):
                return False
            reviewed = attrs.evolve(review, notified_at=self._clock.now())
            tx.put_squad(attrs.evolve(squad, review=reviewed))
        return True

    def record_call(
        self,
        squad_id: str,
        call: ReviewEvidence,
        field_names: Mapping[str, str] | None = None,
    ) -> ReviewOutcome:
        """Revalidate every attestation, then record the verdict (or reopen the work).
        ``field_names`` names missing evidence as the caller knows it (the CLI's flags)."""
        evidence = call.trimmed()
        self._store.snapshot(squad_id)  # SQUAD_NOT_FOUND before any lock file is made
        now = self._clock.now()
        with self._store.transaction(squad_id) as tx:
            squad = tx.squad
            if squad.status is not SquadStatus.REVIEW or squad.review is None:
                raise _not_in_review(squad)
            # Contract §10.4: revalidate before recording anything, whatever the input.
            audit = self._audit_and_reopen(tx, now)
            if audit is None:
                recorded = self._record(
                    tx, squad, squad.review, evidence, now, field_names=field_names
                )
                status = tx.squad.status
        if audit is not None:
            raise audit
        if evidence.verdict is Verdict.FAIL:
            text = (
                f"Independent review FAILED for squad '{squad_id}'. Add rework to the same "
                "squad with add_task (forkFromTask from the task to fix); the failed review "
                "is archived and a fresh review follows when the work is done."
            )
        else:
            text = (
                f"Review recorded ({evidence.verdict}) for squad '{squad_id}'. "
                "The squad is now accepted as done."
            )
        return ReviewOutcome(squad_id, evidence.verdict, status, recorded, text)

    def _audit_and_reopen(self, tx: SquadTransaction, now: datetime) -> SquadOperationError | None:
        """Reopen every done task of a file squad whose attestation (or the canonical file)
        fails; the error to raise once that is committed, or ``None`` when all verify."""
        squad = tx.squad
        if squad.spec is None:
            return None
        canonical: CanonicalSpec | None = None
        canonical_problem: str | None = None
        try:
            canonical = self._auditor.read_canonical(squad)
        except CanonicalIntegrityError as exc:
            canonical_problem = exc.reason
        invalid: list[tuple[str, str]] = []
        for task_id in sorted(tx.tasks):
            task = tx.tasks[task_id]
            if task.status is not TaskStatus.DONE:
                continue
            if canonical is None:
                invalid.append((task_id, f"canonical spec: {canonical_problem}"))
                continue
            check = self._auditor.validate_task_attestation(squad, task, canonical)
            if not check.valid:
                invalid.append((task_id, check.reason or check.status.value))
        if not invalid and canonical_problem is None:
            return None
        reopened: list[str] = []
        for task_id, reason in invalid:
            if tx.tasks[task_id].status is not TaskStatus.DONE:
                continue  # already re-blocked as a descendant of an earlier one
            reopen_with_descendants(
                tx, task_id, f"{ATTESTATION_REOPEN_PREFIX}: {reason}", self._ids, now
            )
            reopened.append(task_id)
        # Whatever was reopened, no verdict may be recorded against unverified bytes.
        begin_rework(tx)
        detail = f" (canonical spec: {canonical_problem})" if canonical_problem else ""
        listed = ", ".join(reopened) if reopened else "(none done)"
        return SquadOperationError(
            ErrorCode.ATTESTATION_INVALID,
            f"Review rejected: invalid canonical spec attestation for task(s): {listed}"
            f"{detail}. Work was reopened.",
        )

    @staticmethod
    def _record(
        tx: SquadTransaction,
        squad: Squad,
        review: Review,
        evidence: ReviewEvidence,
        now: datetime,
        *,
        field_names: Mapping[str, str] | None,
    ) -> Review:
        problem = evidence.problem(field_names)
        if problem is not None:
            raise SquadOperationError(ErrorCode.REVIEW_INVALID, f"Review rejected: {problem}")
        if review.status is not ReviewStatus.PENDING:
            raise _already_recorded(squad.id, review)
        failed = evidence.verdict is Verdict.FAIL
        recorded = attrs.evolve(
            review,
            status=ReviewStatus.FAILED if failed else ReviewStatus.PASSED,
            completed_at=now,
            verdict=evidence.verdict,
            contract_checks=evidence.contract_checks,
            diff_review=evidence.diff_review,
            verification_evidence=evidence.verification_evidence,
            integration_evidence=evidence.integration_evidence,
            issues=evidence.issues,
        )
        if failed:
            tx.put_squad(attrs.evolve(squad, review=recorded))
        else:
            tx.put_squad(move_squad(squad, SquadStatus.DONE, review=recorded))
        return recorded


def review_refusal(squad: Squad) -> SquadOperationError | None:
    """What :meth:`ReviewRecorder.record_call` refuses a squad with before reading any evidence
    (the same code and words), so a person is told before answering any question; ``None``
    when a verdict may be recorded now."""
    if squad.status is not SquadStatus.REVIEW or squad.review is None:
        return _not_in_review(squad)
    if squad.review.status is not ReviewStatus.PENDING:
        return _already_recorded(squad.id, squad.review)
    return None


def _not_in_review(squad: Squad) -> SquadOperationError:
    return SquadOperationError(
        ErrorCode.OPERATION_REFUSED,
        f"Review rejected: squad '{squad.id}' is {squad.status}, not awaiting "
        "orchestrator review; no verdict was recorded",
    )


def _already_recorded(squad_id: str, review: Review) -> SquadOperationError:
    return SquadOperationError(
        ErrorCode.OPERATION_REFUSED,
        f"Review rejected: the review of squad '{squad_id}' is already "
        f"{review.status} ({review.verdict}); a recorded review cannot be "
        "overwritten. Add rework with add_task (forkFromTask) in the same squad.",
    )
