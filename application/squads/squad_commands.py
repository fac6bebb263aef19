"""``/squad``, the slash command of a main Pi: what a person types to see, steer and review the
squads of this project without asking the model. Every answer is text about task ids, states
and proofs, never a spec field."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import attrs

from application.ports import CommandAnswer, CommandSpec, ToolFailure
from application.squads.operations import Action, SquadOperations
from application.squads.status import SquadStatusReader, SquadStatusReport, review_gate_text
from domain.errors import PiSquadError
from domain.squad.model import ReviewStatus, SquadStatus

SUBCOMMANDS = ("status", "watch", "resume", "pause", "cancel", "report", "review")
USAGE = (
    "/squad status|watch|resume|pause|cancel|report|review [SQUAD_ID] (a unique prefix will do; "
    "default: this project's newest squad, for review the newest awaiting review; cancel needs "
    "an id)"
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


@attrs.define
class SquadCommands:
    _status: SquadStatusReader
    _operations: SquadOperations
    _control: SquadControl
    _write_report: Callable[[str], EvidencePack] | None = None

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
        if sub not in SUBCOMMANDS or " " in typed:
            return ()
        ids = self._control.squad_ids()
        return tuple(f"{sub} {i}" for i in ids if i.startswith(typed) and i != typed)

    def _run(self, sub: str, explicit: str | None) -> CommandAnswer:
        if sub == "cancel" and explicit is None:
            # Never the newest by default: cancelling is not undone by a second look.
            raise ToolFailure(
                "/squad cancel needs a squad id (a unique prefix will do); nothing was changed"
            )
        squad_id = self._control.target(explicit, want_review=sub == "review")
        if sub == "cancel":
            return self._change(squad_id, Action.CANCEL)
        if sub == "status":
            return card(self._status.status(squad_id).text(inside_pi=True), squad_id)
        if sub == "watch":
            self._control.expand_view(True)
            return CommandAnswer(
                notify=f"The widget above the editor now lists every task of {squad_id}; "
                "/squad status prints a copy into the transcript."
            )
        if sub == "resume":
            return self._resume(squad_id)
        if sub == "pause":
            return self._change(squad_id, Action.PAUSE)
        if sub == "report":
            return self._report(squad_id)
        return self._review(self._status.status(squad_id))

    def _change(self, squad_id: str, action: Action) -> CommandAnswer:
        result = self._operations.apply(squad_id, action)
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
        squad = report.squad
        pending = (
            squad.status is SquadStatus.REVIEW
            and squad.review is not None
            and squad.review.status is ReviewStatus.PENDING
        )
        if not pending:
            return CommandAnswer(
                notify=f"Squad {squad.id} is {squad.status}, not awaiting review.", level="warning"
            )
        steps = [
            review_gate_text(report),
            "",
            "To review it: read each task's output (/squad report writes them all into one "
            "evidence pack), check the work against the spec, run the tests, then record the "
            "verdict with squad_review, giving every piece of evidence it asks for: "
            "contractChecks (one line per contract item checked), diffReview, "
            "verificationEvidence (commands run and their results) and integrationEvidence; "
            "issues for pass_with_issues or fail.",
        ]
        return card("\n".join(steps), squad.id)


def card(text: str, squad_id: str) -> CommandAnswer:
    """A message that stays in the transcript (shown to the person; the model sees it too)."""
    message: dict[str, Any] = {
        "customType": CARD_TYPE,
        "content": text,
        "display": True,
        "details": {"squadId": squad_id},
    }
    return CommandAnswer(message=message)
