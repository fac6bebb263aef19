"""``/squad``, the slash command of a main Pi: what a person types to see, steer and review the
squads of this project without asking the model. Every answer is text about task ids, states
and proofs, never a spec field."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import attrs

from application.ports import CommandAnswer, CommandQuestion, CommandSpec, ToolFailure
from application.squads.inspect_view import SquadInspector
from application.squads.operations import Action, SquadOperations
from application.squads.review import review_refusal
from application.squads.review_dialog import ReviewDialog, opening_notice, review_instructions
from application.squads.status import SquadStatusReader, SquadStatusReport
from domain.errors import PiSquadError
from domain.squad.model import Actor, SquadStatus

SUBCOMMANDS = (
    "status",
    "watch",
    "inspect",
    "resume",
    "pause",
    "cancel",
    "dismiss",
    "report",
    "review",
)
USAGE = (
    "/squad status|watch|resume|pause|cancel|dismiss|report|review [SQUAD_ID] (a unique prefix "
    "will do; default: this project's newest squad, for review the newest awaiting review; cancel "
    "and dismiss need an id); /squad inspect [TASK_ID] opens each child's activity"
)
SQUAD_COMMAND = CommandSpec(name="squad", description=f"pi-squad: {USAGE}")
CARD_TYPE = "squad-card"


@attrs.frozen
class EvidencePack:
    """Where ``report`` wrote a squad's evidence pack, and whether its attestation audit
    passed."""

    path: str
    audit_passed: bool
    problems: tuple[str, ...]


class SquadControl(Protocol):
    """What the main role lends the command: its squads and its drivers."""

    def target(self, explicit: str | None, *, want_review: bool = False) -> str: ...

    def ensure_driver(self, squad_id: str) -> None: ...

    def stop_driver(self, squad_id: str) -> None: ...

    def expand_view(self, expanded: bool) -> None: ...

    def squad_ids(self) -> tuple[str, ...]: ...

    def shown_reports(self) -> Sequence[SquadStatusReport]: ...


@attrs.define
class SquadCommands:
    _status: SquadStatusReader
    _operations: SquadOperations
    _control: SquadControl
    _write_report: Callable[[str], EvidencePack] | None = None
    # The inspect overlay's pages; ``None``: ``inspect`` and ``watch`` answer in text only.
    _inspector: SquadInspector | None = attrs.field(default=None, kw_only=True)
    # A person's review in Pi's dialogs; ``None``, or a session without a UI: what to type.
    _review_dialog: ReviewDialog | None = attrs.field(default=None, kw_only=True)
    _has_ui: bool = attrs.field(default=False, init=False)

    def session_ui(self, has_ui: bool) -> None:
        """Whether this session can show a dialog (Pi's ``ctx.hasUI``)."""
        self._has_ui = has_ui

    def answered(self, args: str, answers: Mapping[str, str]) -> CommandAnswer:
        """``/squad review SQUAD_ID`` again, with the person's answers so far: the next
        question, or the review recorded (``application.squads.review_dialog``)."""
        words = args.split()
        if len(words) != 2 or words[0] != "review" or self._review_dialog is None:
            raise ToolFailure(f"/squad {args} asks no questions; nothing was recorded")
        try:
            squad_id = self._control.target(words[1], want_review=True)
            return self._review_step(self._status.status(squad_id), answers)
        except PiSquadError as error:
            raise ToolFailure(f"{error.code}: {error.message}") from None

    def run(self, args: str) -> CommandAnswer:
        words = args.split()
        sub = words[0] if words else "status"
        if sub not in SUBCOMMANDS or len(words) > 2:
            raise ToolFailure(f"usage: {USAGE}")
        explicit = words[1] if len(words) == 2 else None
        try:
            return self._run(sub, explicit)
        except PiSquadError as error:
            raise ToolFailure(f"{error.code}: {error.message}") from None

    def completions(self, text: str) -> tuple[str, ...]:
        """What Tab offers for the argument ``text``: the subcommands it starts, then, after a
        subcommand, ``<subcommand> <id>`` for this project's squad ids it starts (newest
        first). A word typed whole is not offered again: Pi's editor gives Enter to an offer
        on screen, so ``/squad status`` + Enter must run, not re-select ``status``."""
        sub, space, typed = text.lstrip().partition(" ")
        if not space:
            return tuple(name for name in SUBCOMMANDS if name.startswith(sub) and name != sub)
        typed = typed.strip()
        # ``inspect`` takes a task id, not a squad id: offering squad ids would mislead.
        if sub not in SUBCOMMANDS or sub == "inspect" or " " in typed:
            return ()
        ids = self._control.squad_ids()
        return tuple(f"{sub} {i}" for i in ids if i.startswith(typed) and i != typed)

    def _run(self, sub: str, explicit: str | None) -> CommandAnswer:
        if sub == "inspect":
            return self._inspect(self._control.shown_reports(), explicit)
        if sub in ("cancel", "dismiss") and explicit is None:
            # Never the newest by default: neither is undone by a second look.
            raise ToolFailure(
                f"/squad {sub} needs a squad id (a unique prefix will do); nothing was changed"
            )
        squad_id = self._control.target(explicit, want_review=sub == "review")
        if sub == "cancel":
            return self._change(squad_id, Action.CANCEL)
        if sub == "dismiss":
            return CommandAnswer(notify=self._operations.dismiss(squad_id))
        if sub == "status":
            return card(self._status.status(squad_id).text(inside_pi=True), squad_id)
        if sub == "watch":
            return self._watch(self._status.status(squad_id))
        if sub == "resume":
            return self._resume(squad_id)
        if sub == "pause":
            return self._change(squad_id, Action.PAUSE)
        if sub == "report":
            return self._report(squad_id)
        return self._review(self._status.status(squad_id))

    def _watch(self, report: SquadStatusReport) -> CommandAnswer:
        """A squad whose children may run: every task in the widget, and the inspect overlay
        on it; any other squad: what it is and the command that moves it on, since nothing
        would appear to watch."""
        squad = report.squad
        if squad.status in (SquadStatus.RUNNING, SquadStatus.PAUSED):
            self._control.expand_view(True)
            return self._inspect([report], None)
        if squad.status is SquadStatus.REVIEW:
            then = f"/squad review {squad.id} reviews it"
        elif squad.status is SquadStatus.DONE:
            then = f"{report.report_command(inside_pi=True)} writes its evidence pack"
        else:
            then = f"/squad status {squad.id} shows why; {report.next_command(inside_pi=True)}"
        return CommandAnswer(
            notify=f"Squad {squad.id} is {squad.status_word}: no child runs, so there is "
            f"nothing to watch; {then}."
        )

    def _inspect(self, reports: Sequence[SquadStatusReport], task: str | None) -> CommandAnswer:
        if self._inspector is None:
            raise ToolFailure("/squad inspect is not available in this session")
        return CommandAnswer(ui=self._inspector.instruction(reports, task))

    def _change(self, squad_id: str, action: Action) -> CommandAnswer:
        result = self._operations.apply(squad_id, action, by=Actor.PERSON)
        self._control.stop_driver(squad_id)
        return CommandAnswer(notify=result.text)

    def _resume(self, squad_id: str) -> CommandAnswer:
        """Resume also revives suspended and failed tasks (a new driver never does that by
        itself); this session then drives the squad, if anything is left to run."""
        if self._status.status(squad_id).squad.status is SquadStatus.DONE:
            return CommandAnswer(
                notify=f"Squad {squad_id} is done and accepted: nothing to resume. "
                f"/squad report {squad_id} writes its evidence pack."
            )
        result = self._operations.apply(squad_id, Action.RESUME)
        status = self._status.status(squad_id).squad.status
        if status is SquadStatus.RUNNING:
            self._control.ensure_driver(squad_id)
            return CommandAnswer(notify=f"{result.text} This session drives it.")
        if status is SquadStatus.REVIEW:
            return CommandAnswer(
                notify=f"{result.text} Nothing is left to run: it awaits review "
                f"(/squad review {squad_id})."
            )
        return CommandAnswer(notify=result.text)

    def _report(self, squad_id: str) -> CommandAnswer:
        if self._write_report is None:
            raise ToolFailure(f"run `pi-squad report {squad_id} --out FILE` in a terminal")
        pack = self._write_report(squad_id)
        if pack.audit_passed:
            return CommandAnswer(
                notify=f"Evidence pack of {squad_id} written to {pack.path} (attestation audit: "
                "PASS)."
            )
        return CommandAnswer(
            notify=f"Evidence pack of {squad_id} written to {pack.path}; attestation audit FAILS: "
            + "; ".join(pack.problems),
            level="warning",
        )

    def _review(self, report: SquadStatusReport) -> CommandAnswer:
        """Refused as ``pi-squad review`` refuses it; else the dialog's first question, or,
        with no dialog to show, the review gate and what to type instead."""
        refusal = review_refusal(report.squad)
        if refusal is not None:
            raise refusal
        if self._review_dialog is None or not self._has_ui:
            return card(review_instructions(report), report.squad.id)
        return self._review_step(report, {})

    def _review_step(self, report: SquadStatusReport, answers: Mapping[str, str]) -> CommandAnswer:
        assert self._review_dialog is not None
        step = self._review_dialog.next_step(report, answers)
        if isinstance(step, CommandQuestion):
            opening = None if answers else opening_notice(report)
            return CommandAnswer(notify=opening, question=step)
        return card(step.text, step.squad_id)


def card(text: str, squad_id: str) -> CommandAnswer:
    """A message that stays in the transcript (shown to the person; the model sees it too)."""
    message: dict[str, Any] = {
        "customType": CARD_TYPE,
        "content": text,
        "display": True,
        "details": {"squadId": squad_id},
    }
    return CommandAnswer(message=message)
