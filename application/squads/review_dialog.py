"""``/squad review`` for a person: the verdict and each piece of evidence ``pi-squad review``
takes (its five evidence flags), asked one question at a time in Pi's own dialogs, then
recorded by the same use case as the CLI (``ReviewRecorder.record_call``: the same records,
the same refusals and codes).

Stateless: each answer comes back with the ones before it (``CommandQuestion``) and nothing is
recorded before the last one, so Esc at any question leaves no trace. Without a UI (Pi's print
or JSON mode) the person is told what to type in a terminal instead.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from application.ports import CommandQuestion, QuestionKind, ToolFailure
from application.spec_reads import AttestationStatus
from application.squads.review import (
    ReviewOutcome,
    ReviewRecorder,
    parse_review_call,
    review_refusal,
)
from application.squads.status import SquadStatusReport, review_gate_text
from domain.squad.model import Squad, Verdict


@attrs.frozen
class EvidenceQuestion:
    """One question: the review call's field it fills, the dialog that asks it, what it is
    called (in the question and in a refusal), and whether each line is an entry of its own
    (the evidence the CLI takes one flag per entry)."""

    field: str
    kind: QuestionKind
    label: str
    asks: str
    one_per_line: bool = False


QUESTIONS = (
    EvidenceQuestion("verdict", QuestionKind.SELECT, "verdict", "your verdict"),
    EvidenceQuestion(
        "contractChecks",
        QuestionKind.EDITOR,
        "contract checks",
        "one line per contract item you checked",
        one_per_line=True,
    ),
    EvidenceQuestion(
        "diffReview", QuestionKind.INPUT, "diff review", "what the diff changes and what you read"
    ),
    EvidenceQuestion(
        "verificationEvidence",
        QuestionKind.EDITOR,
        "verification evidence",
        "one line per command you ran and its result",
        one_per_line=True,
    ),
    EvidenceQuestion(
        "integrationEvidence",
        QuestionKind.INPUT,
        "integration evidence",
        "how the work fits together with the rest of the project",
    ),
    EvidenceQuestion(
        "issues",
        QuestionKind.EDITOR,
        "issues",
        "one per line (needed for pass_with_issues and fail; leave empty for pass)",
        one_per_line=True,
    ),
)
# Missing evidence is named as the dialog asked for it (the CLI names its flags).
EVIDENCE_LABELS = {question.field: question.label for question in QUESTIONS}


def review_args(squad_id: str) -> str:
    """What the shim sends back with the answers: ``/squad review`` of this squad, whichever
    squad is the newest awaiting review by then."""
    return f"review {squad_id}"


@attrs.frozen
class ReviewDialog:
    _reviews: ReviewRecorder

    def next_step(
        self, report: SquadStatusReport, answers: Mapping[str, str]
    ) -> CommandQuestion | ReviewOutcome:
        """The first question not yet answered, or, once all are, the review recorded as
        ``pi-squad review`` records it. A squad with no pending review is refused before any
        question (the code the CLI gives), and again at each answer: another reviewer may have
        recorded a verdict meanwhile."""
        squad = report.squad
        refusal = review_refusal(squad)
        if refusal is not None:
            raise refusal
        asked = {question.field for question in QUESTIONS}
        unknown = sorted(set(answers) - asked)
        if unknown:
            raise ToolFailure(
                f"/squad review asks no {', '.join(unknown)}; nothing was recorded. "
                f"/squad review {squad.id} starts again."
            )
        for question in QUESTIONS:
            if question.field not in answers:
                return _asked(question, squad)
        document = {
            question.field: (
                answers[question.field].splitlines()
                if question.one_per_line
                else answers[question.field]
            )
            for question in QUESTIONS
        }
        return self._reviews.record_call(squad.id, parse_review_call(document), EVIDENCE_LABELS)


def _asked(question: EvidenceQuestion, squad: Squad) -> CommandQuestion:
    options = tuple(verdict.value for verdict in Verdict) if question.field == "verdict" else ()
    return CommandQuestion(
        key=question.field,
        kind=question.kind,
        title=f"Review of squad {squad.id}, {question.label}: {question.asks}",
        args=review_args(squad.id),
        cancelled=f"Review of squad {squad.id} cancelled: nothing was recorded "
        f"(/squad review {squad.id} starts again).",
        options=options,
    )


def opening_notice(report: SquadStatusReport) -> str:
    """What the person is told as the first question opens: the proof at hand, where the
    evidence pack is, and that Esc leaves no trace."""
    squad = report.squad
    proof = ""
    if squad.spec is not None:
        required = [t for t in report.tasks if t.attestation is not AttestationStatus.NOT_REQUIRED]
        valid = sum(1 for t in required if t.attestation is AttestationStatus.VALID)
        proof = f" {valid} of {len(required)} required attestations verify."
    return (
        f"Reviewing squad {squad.id}.{proof} /squad report {squad.id} writes the evidence "
        "pack. Esc cancels: nothing is recorded before the last answer."
    )


def review_instructions(report: SquadStatusReport) -> str:
    """``/squad review`` where no dialog can be shown (Pi's print or JSON mode): the review gate,
    how the model records a verdict, and what a person types in a terminal instead."""
    squad_id = report.squad.id
    return "\n".join(
        [
            review_gate_text(report),
            "",
            "To review it: read each task's output (/squad report writes them all into one "
            "evidence pack), check the work against the spec, run the tests, then record the "
            "verdict with squad_review, giving every piece of evidence it asks for: "
            "contractChecks (one line per contract item checked), diffReview, "
            "verificationEvidence (commands run and their results) and integrationEvidence; "
            "issues for pass_with_issues or fail.",
            "",
            "No dialog can be shown in this session. A person records the same review in a "
            f"terminal: `pi-squad review {squad_id} --verdict pass|pass_with_issues|fail "
            "--contract-check TEXT --diff-review TEXT --verification TEXT --integration TEXT "
            "[--issue TEXT]` (--contract-check, --verification and --issue once per entry), "
            "or with `/squad review` in an interactive Pi, which asks for each.",
        ]
    )
