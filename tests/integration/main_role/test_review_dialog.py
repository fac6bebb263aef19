"""Issue 31 item 4 on fakes: ``/squad review`` for a person. A scripted UI plays the shim's part
(docs/bridge.md, ``command`` with ``answers``): it answers each question the main role asks and
sends the command again with every answer so far; Esc sends nothing more. The review is recorded
as ``pi-squad review`` records it (the same use case, the same records) and refused with the
CLI's codes; without a UI the person is told what to type instead."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from application.main_role import MainRole
from application.ports import (
    CommandAnswer,
    CommandQuestion,
    QuestionKind,
    SessionNotification,
    ToolFailure,
)
from application.squads.review import parse_review_call
from domain.errors import ErrorCode, PiSquadError
from domain.squad.model import ReviewStatus, SquadStatus, TaskStatus, Verdict
from entrypoints.cli_runtime import EVIDENCE_FLAGS
from tests.integration.main_role.support import ui_events
from tests.integration.main_role.test_commands import message_of
from tests.integration.ops_support import (
    recorder,
    run_to_review,
    squad_files,
    squad_status,
    tamper,
)
from tests.runtime_world import RuntimeWorld

ESC = None
FIELDS = (
    "verdict",
    "contractChecks",
    "diffReview",
    "verificationEvidence",
    "integrationEvidence",
    "issues",
)
PASSING = [
    "pass",
    "every task of the spec is implemented\n   \n  the CLI prints counts  ",
    "read the whole diff",
    "pytest: 12 passed\nmake demo: review",
    "ran the CLI end to end",
    "",
]


@attrs.define
class ScriptedUi:
    """Pi's dialogs answering from a script (``ESC``: the person pressed Esc), driven the way
    the shim drives them; every question asked is kept."""

    replies: list[str | None]
    asked: list[CommandQuestion] = attrs.Factory(list)

    def run(self, role: MainRole, args: str) -> CommandAnswer | None:
        """``/squad ARGS`` and its dialog: the last answer, or ``None`` once Esc ended it."""
        answer = role.command("squad", args)
        answers: dict[str, str] = {}
        while answer.question is not None:
            question = answer.question
            self.asked.append(question)
            reply = self.replies.pop(0)
            if reply is ESC:
                return None
            answers[question.key] = reply
            answer = role.answered("squad", question.args, answers)
        return answer


@pytest.fixture
def person(role: MainRole) -> MainRole:
    """The main role of a session with a UI (Pi's ``ctx.hasUI``)."""
    role.session_ui(True)
    return role


def cli_refusal(world: RuntimeWorld, changes: dict[str, Any]) -> PiSquadError:
    """What ``pi-squad review`` (``cmd_review``'s call) refuses the passing evidence with,
    ``changes`` made to it."""
    document = {
        "verdict": "pass",
        "contractChecks": ["every task of the spec is implemented"],
        "diffReview": "read the whole diff",
        "verificationEvidence": ["pytest: 12 passed"],
        "integrationEvidence": "ran the CLI end to end",
        "issues": [],
        **changes,
    }
    call = parse_review_call(document)
    with pytest.raises(PiSquadError) as refused:
        recorder(world).record_call(world.squad_id, call, EVIDENCE_FLAGS)
    return refused.value


def dialog_refusal(
    role: MainRole, replies: list[str | None], args: str = "review"
) -> tuple[str, ScriptedUi]:
    ui = ScriptedUi(replies)
    with pytest.raises(ToolFailure) as refused:
        ui.run(role, args)
    return refused.value.message, ui


def test_a_person_answers_each_question_and_the_review_is_recorded_as_the_cli_records_it(
    person: MainRole, world: RuntimeWorld
) -> None:
    run_to_review(world)
    ui = ScriptedUi(list(PASSING))
    answer = ui.run(person, "review")

    assert tuple(q.key for q in ui.asked) == FIELDS, "the verdict, then each flag's evidence"
    verdict = ui.asked[0]
    assert verdict.kind is QuestionKind.SELECT
    assert verdict.options == ("pass", "pass_with_issues", "fail")
    assert {q.args for q in ui.asked} == {f"review {world.squad_id}"}, "pinned to one squad"
    assert answer is not None
    assert message_of(answer).startswith(f"Review recorded (pass) for squad '{world.squad_id}'")
    squad = world.store.snapshot(world.squad_id).squad
    assert squad.status is SquadStatus.DONE
    assert squad.review is not None
    assert squad.review.status is ReviewStatus.PASSED
    assert squad.review.verdict is Verdict.PASS
    assert squad.review.contract_checks == (
        "every task of the spec is implemented",
        "the CLI prints counts",
    ), "one entry per line, blank lines dropped, as the CLI's repeated flag"
    assert squad.review.diff_review == "read the whole diff"
    assert squad.review.verification_evidence == ("pytest: 12 passed", "make demo: review")
    assert squad.review.integration_evidence == "ran the CLI end to end"
    assert squad.review.issues == ()


def test_a_recorded_review_is_drawn_before_the_answer(
    person: MainRole, world: RuntimeWorld
) -> None:
    run_to_review(world)
    emitted: list[SessionNotification] = []
    person.attach(emitted.append)
    ScriptedUi(list(PASSING)).run(person, "review")
    drawn = [e["text"] for e in ui_events(emitted) if e["method"] == "setStatus"]
    assert drawn, "the status item was drawn"
    assert "review needed" not in str(drawn[-1]), "no stale review gate once it is recorded"


def test_the_first_question_comes_with_the_proof_and_how_to_cancel(
    person: MainRole, world: RuntimeWorld
) -> None:
    run_to_review(world)
    opened = person.command("squad", "review")
    assert opened.notify is not None
    assert "4 of 4 required attestations verify" in opened.notify
    assert "Esc cancels: nothing is recorded before the last answer" in opened.notify
    assert opened.question is not None
    assert opened.question.key == "verdict"


@pytest.mark.parametrize("position", range(len(FIELDS)))
def test_esc_at_any_question_cancels_and_records_nothing(
    person: MainRole, world: RuntimeWorld, position: int
) -> None:
    run_to_review(world)
    before = squad_files(world)
    ui = ScriptedUi([*PASSING[:position], ESC])
    assert ui.run(person, "review") is None
    assert "nothing was recorded" in ui.asked[-1].cancelled
    assert squad_files(world) == before, "not one byte of the squad changed"


def test_a_squad_not_awaiting_review_is_refused_with_the_clis_code_before_any_question(
    person: MainRole, world: RuntimeWorld
) -> None:
    message, ui = dialog_refusal(person, [], f"review {world.squad_id}")
    cli = cli_refusal(world, {})
    assert cli.code is ErrorCode.OPERATION_REFUSED
    assert message == f"{cli.code}: {cli.message}", "the same code and words as the CLI"
    assert ui.asked == []


def test_missing_evidence_is_refused_with_the_clis_code_and_nothing_is_recorded(
    person: MainRole, world: RuntimeWorld
) -> None:
    run_to_review(world)
    before = squad_files(world)
    # A failing verdict with no issue, and blank contract checks.
    message, _ = dialog_refusal(person, ["fail", "  ", *PASSING[2:5], ""])
    cli = cli_refusal(world, {"verdict": "fail", "contractChecks": [" "]})
    assert cli.code is ErrorCode.REVIEW_INVALID
    assert message.startswith(f"{ErrorCode.REVIEW_INVALID}: Review rejected: missing ")
    assert "contract checks: at least one non-empty contract check" in message
    assert "issues: at least one non-empty issue (verdict fail)" in message
    assert squad_files(world) == before


def test_a_tampered_attestation_is_refused_with_the_clis_code_and_the_task_reopened(
    person: MainRole, world: RuntimeWorld
) -> None:
    run_to_review(world)
    tamper(world, "design")
    message, _ = dialog_refusal(person, list(PASSING))
    assert message.startswith(f"{ErrorCode.ATTESTATION_INVALID}: Review rejected: ")
    assert squad_status(world) is SquadStatus.RUNNING
    assert world.store.snapshot(world.squad_id).tasks["design"].status is not TaskStatus.DONE


def test_a_failed_review_recorded_through_the_dialog_cannot_be_overwritten(
    person: MainRole, world: RuntimeWorld
) -> None:
    run_to_review(world)
    failed = ScriptedUi(["fail", *PASSING[1:5], "the parser breaks"]).run(person, "review")
    assert failed is not None
    assert "FAILED" in message_of(failed)
    assert squad_status(world) is SquadStatus.REVIEW
    message, ui = dialog_refusal(person, [], f"review {world.squad_id}")
    cli = cli_refusal(world, {})
    assert message == f"{cli.code}: {cli.message}"
    assert "cannot be overwritten" in message
    assert ui.asked == [], "refused before any question"


def test_without_a_ui_the_review_gate_says_what_to_type_instead(
    role: MainRole, world: RuntimeWorld
) -> None:
    run_to_review(world)
    role.session_ui(False)
    answer = role.command("squad", "review")
    assert answer.question is None
    text = message_of(answer)
    assert "awaiting orchestrator review" in text
    assert f"pi-squad review {world.squad_id} --verdict pass|pass_with_issues|fail" in text
    for flag in EVIDENCE_FLAGS.values():
        assert flag in text, f"every flag of the CLI is named: {flag}"
    assert squad_status(world) is SquadStatus.REVIEW


@pytest.mark.parametrize(
    ("args", "answers"),
    [("status", {"verdict": "pass"}), ("review", {"verdict": "pass", "reviewer": "me"})],
)
def test_answers_the_review_dialog_never_asked_for_are_refused(
    person: MainRole, world: RuntimeWorld, args: str, answers: dict[str, str]
) -> None:
    run_to_review(world)
    before = squad_files(world)
    with pytest.raises(ToolFailure) as refused:
        person.answered("squad", f"{args} {world.squad_id}", answers)
    assert "nothing was recorded" in refused.value.message
    assert squad_files(world) == before
