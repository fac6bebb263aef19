"""Operations on a squad's work (upstream ``squad_modify``, pi-squad-upstream.md §3, §7).

Thin handlers: each operation loads the squad in one locked store transaction, checks what
needs a port (the agent catalogue, the attestation, an invalid progress file), asks the pure
aggregate (``domain/squad/decisions.py``) for a decision, and writes back exactly what it
changed. A refusal raises before anything is written, so it leaves every record byte for byte
as it was; an accepted change is written whole. Operations never touch child processes: the
scheduler's reconcile is level-triggered, kills a live child whose task is no longer
``in_progress`` in the store, and spawns what became ready, in this process or another one.

Targeting is exact: every operation names one squad (``cancel`` refuses an empty or inexact
ID) and task actions name one task. Completion by an operator goes through the same
``validate_task_attestation`` as settlement (contract §10.2) and is refused without any status
change when a file squad's task has no valid attestation.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Sequence

import attrs

from application.attestation_check import AttestationAuditor
from application.canonical import CanonicalIntegrityError
from application.ports import AgentDirectory, Clock, Ids, StableReadError, Store
from application.squads import squad_state
from application.squads.squad_state import begin_rework, reopen_with_descendants, unblock_ready
from domain.agents import UnavailableAgent, show_agent_name
from domain.attestation import CoverageState, ProgressCorrupt, parse_progress
from domain.attestation.timestamps import format_rfc3339_millis
from domain.errors import ErrorCode, NotFoundError
from domain.squad import decisions
from domain.squad.decisions import Decision, NewTask
from domain.squad.model import Actor, Squad, TaskStatus
from domain.squad.state import (
    BUDGETS_RESET,
    MARKED_DONE_OUTPUT,
    SquadState,
    refuse,
    show_id,
)

__all__ = [
    "BUDGETS_RESET",
    "MARKED_DONE_OUTPUT",
    "TASK_ACTIONS",
    "Action",
    "NewTask",
    "OperationResult",
    "SquadOperations",
    "begin_rework",
    "reopen_with_descendants",
    "show_id",
    "unblock_ready",
]

_MAX_PROGRESS_BYTES = 16 * 1024 * 1024


class Action(enum.StrEnum):
    ADD_TASK = "add_task"
    SET_DEPENDENCIES = "set_dependencies"
    CANCEL_TASK = "cancel_task"
    PAUSE_TASK = "pause_task"
    RESUME_TASK = "resume_task"
    COMPLETE_TASK = "complete_task"
    PAUSE = "pause"
    RESUME = "resume"
    CANCEL = "cancel"


TASK_ACTIONS = frozenset(
    {
        Action.SET_DEPENDENCIES,
        Action.CANCEL_TASK,
        Action.PAUSE_TASK,
        Action.RESUME_TASK,
        Action.COMPLETE_TASK,
    }
)


@attrs.frozen
class OperationResult:
    """What an accepted operation did. ``changed`` is false for a no-op (already cancelled,
    already done, already running...). ``reset_budgets``: tasks whose spawn-retry and
    attestation-rejection budgets the operation reset (also recorded durably, see
    ``BUDGETS_RESET``); an in-process scheduler may apply it at once."""

    squad_id: str
    action: Action
    text: str
    task_id: str | None = None
    changed: bool = True
    reset_budgets: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class SquadOperations:
    """``squad_modify``: add_task, set_dependencies, cancel_task, pause_task, resume_task,
    complete_task, and whole-squad pause, resume and cancel."""

    _store: Store
    _auditor: AttestationAuditor
    _agents: AgentDirectory
    _clock: Clock
    _ids: Ids

    def apply(
        self,
        squad_id: str,
        action: Action,
        *,
        task_id: str | None = None,
        depends: Sequence[str] | None = None,
        output: str | None = None,
        task: NewTask | None = None,
        by: Actor | None = None,
    ) -> OperationResult:
        """One ``squad_modify`` call: the CLI and the main Pi's tool both come through here;
        ``by``: who asked (kept with a whole-squad cancel)."""
        if action in TASK_ACTIONS and not task_id:
            raise refuse(ErrorCode.TASK_INPUT_INVALID, f"{action} requires taskId")
        if action is Action.ADD_TASK:
            if task is None:
                raise refuse(ErrorCode.TASK_INPUT_INVALID, "add_task requires task")
            return self.add_task(squad_id, task)
        if action is Action.SET_DEPENDENCIES:
            if depends is None:
                raise refuse(
                    ErrorCode.TASK_INPUT_INVALID, "set_dependencies requires depends ([] clears)"
                )
            return self.set_dependencies(squad_id, str(task_id), depends)
        simple_task_actions = {
            Action.CANCEL_TASK: self.cancel_task,
            Action.PAUSE_TASK: self.pause_task,
            Action.RESUME_TASK: self.resume_task,
        }
        if action in simple_task_actions:
            return simple_task_actions[action](squad_id, str(task_id))
        if action is Action.COMPLETE_TASK:
            return self.complete_task(squad_id, str(task_id), output)
        squad_actions = {Action.PAUSE: self.pause, Action.RESUME: self.resume}
        if action in squad_actions:
            return squad_actions[action](squad_id)
        return self.cancel(squad_id, by)

    # -- the one shape of every operation -----------------------------------------------------

    def _require_squad(self, squad_id: str) -> Squad:
        """The squad as committed (``SQUAD_NOT_FOUND``); checked before a transaction, whose
        lock file must never create a directory for a squad that does not exist."""
        return self._store.snapshot(squad_id).squad

    def _decide(
        self,
        squad_id: str,
        action: Action,
        decide: Callable[[SquadState], Decision],
        *,
        task_id: str | None = None,
    ) -> OperationResult:
        """Load, decide, save: one transaction; a refusal raised by ``decide`` writes nothing."""
        decision = self._transact(squad_id, decide)
        return OperationResult(
            squad_id,
            action,
            decision.text,
            task_id=task_id,
            changed=decision.changed,
            reset_budgets=decision.reset_budgets,
        )

    def _transact(self, squad_id: str, decide: Callable[[SquadState], Decision]) -> Decision:
        now = self._clock.now()
        with self._store.transaction(squad_id) as tx:
            before = squad_state.load(tx)
            decision = decide(before)
            squad_state.save(tx, before, decision.state, self._ids, now)
        return decision

    def _decide_task(
        self,
        squad_id: str,
        action: Action,
        task_id: str,
        decide: Callable[[SquadState, str], Decision],
    ) -> OperationResult:
        """A task action, decided for ``task_id``: the squad must exist before its transaction
        starts (as above)."""
        self._require_squad(squad_id)
        return self._decide(squad_id, action, lambda state: decide(state, task_id), task_id=task_id)

    # -- task actions -------------------------------------------------------------------------

    def add_task(self, squad_id: str, new: NewTask) -> OperationResult:
        decisions.check_new_task(self._require_squad(squad_id), new)
        now = self._clock.now()

        def decide(state: SquadState) -> Decision:
            decisions.check_placement(state, new)
            self._check_agent(state.squad, new.agent)
            return decisions.add_task(state, new, now)

        return self._decide(squad_id, Action.ADD_TASK, decide, task_id=new.id)

    def _check_agent(self, squad: Squad, agent: str) -> None:
        catalog = self._agents.catalog(squad.cwd)
        found = catalog.get(agent)
        if isinstance(found, UnavailableAgent):
            enabled = ", ".join(catalog.enabled_names()) or "(none)"
            raise refuse(
                ErrorCode.AGENT_UNAVAILABLE,
                f"task.agent {show_agent_name(agent)} is {found.reason.value}; "
                f"enabled agents: {enabled}",
            )

    def set_dependencies(
        self, squad_id: str, task_id: str, depends: Sequence[str]
    ) -> OperationResult:
        wanted = functools.partial(decisions.set_dependencies, depends=tuple(depends))
        return self._decide_task(squad_id, Action.SET_DEPENDENCIES, task_id, wanted)

    def cancel_task(self, squad_id: str, task_id: str) -> OperationResult:
        cancel = functools.partial(decisions.cancel_task, now=self._clock.now())
        return self._decide_task(squad_id, Action.CANCEL_TASK, task_id, cancel)

    def pause_task(self, squad_id: str, task_id: str) -> OperationResult:
        return self._decide_task(squad_id, Action.PAUSE_TASK, task_id, decisions.pause_task)

    def resume_task(self, squad_id: str, task_id: str) -> OperationResult:
        def decide(state: SquadState, task_id: str) -> Decision:
            decision = decisions.resume_task(state, task_id)
            if decision.changed:
                self._release_invalid_progress(state.squad, task_id)
            return decision

        return self._decide_task(squad_id, Action.RESUME_TASK, task_id, decide)

    def _release_invalid_progress(self, squad: Squad, task_id: str) -> None:
        """An explicit resume lets a task whose progress file is ``INVALID`` (a conflicting or
        foreign record) read again: the file is moved aside for audit, never deleted and never
        accepted. Only after the canonical file verifies; otherwise nothing is touched."""
        if squad.spec is None:
            return
        try:
            canonical = self._auditor.read_canonical(squad)
        except CanonicalIntegrityError:
            return
        ledger = self._auditor.ledger(squad, task_id)
        fs = self._auditor.fs
        path = ledger.paths.state
        with ledger.locked():
            try:
                data = fs.read_small(path, _MAX_PROGRESS_BYTES)
            except StableReadError:
                return  # missing (nothing to release) or unreadable (the ledger handles it)
            try:
                coverage = parse_progress(data, ledger.binding(canonical), canonical.table)
            except ProgressCorrupt:
                return  # a corrupt file is moved aside by the ledger itself on its next load
            if coverage.state is not CoverageState.INVALID:
                return
            stamp = format_rfc3339_millis(self._clock.now()).replace(":", "")
            fs.rename_no_replace(path, f"{path}.invalid-{stamp}-{self._ids.uuid4_hex()[:8]}")

    def complete_task(
        self, squad_id: str, task_id: str, output: str | None = None
    ) -> OperationResult:
        now = self._clock.now()

        def decide(state: SquadState, task_id: str) -> Decision:
            task = state.task(task_id)
            if task.status not in {TaskStatus.DONE, TaskStatus.CANCELLED}:
                check = self._auditor.validate_task_attestation(state.squad, task)
                if not check.valid:
                    raise refuse(
                        ErrorCode.ATTESTATION_INVALID,
                        f"cannot complete: {check.reason or check.status.value} "
                        f"(task '{task_id}' has no valid spec-read attestation; no status "
                        "changed)",
                    )
            return decisions.complete_task(state, task_id, output, now)

        return self._decide_task(squad_id, Action.COMPLETE_TASK, task_id, decide)

    # -- the whole squad ----------------------------------------------------------------------

    def pause(self, squad_id: str) -> OperationResult:
        self._require_squad(squad_id)
        return self._decide(squad_id, Action.PAUSE, decisions.pause)

    def resume(self, squad_id: str) -> OperationResult:
        self._require_squad(squad_id)
        return self._decide(squad_id, Action.RESUME, decisions.resume)

    def cancel(self, squad_id: str, by: Actor | None = None) -> OperationResult:
        """Exact targeting: the squad ID must be given and must name a squad exactly; ``by``
        (who asked) is kept with the cancel, as is when."""
        exact = squad_id.strip()
        if not exact:
            raise refuse(
                ErrorCode.OPERATION_REFUSED,
                "cancel requires exact squadId; no squad was changed.",
            )
        try:
            self._require_squad(exact)
        except NotFoundError:
            raise NotFoundError(
                ErrorCode.SQUAD_NOT_FOUND,
                f"Squad {show_id(exact)} not found; no squad was changed.",
            ) from None
        now = self._clock.now()
        return self._decide(exact, Action.CANCEL, lambda state: decisions.cancel(state, now, by))

    def dismiss(self, squad_id: str) -> str:
        """``/squad dismiss``: the squad leaves the main Pi's widget and footer, kept in its own
        record (``dismissedAt``) until a resume; what the person is told."""
        self._require_squad(squad_id)
        now = self._clock.now()
        return self._transact(squad_id, lambda state: decisions.dismiss(state, now)).text
