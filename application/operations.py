"""Operations on a squad's work (upstream ``squad_modify``, pi-squad-upstream.md §3, §7).

Each operation is one locked store transaction that validates everything before it changes
anything, so a refusal leaves every record byte for byte as it was, and an accepted change is
written whole. Operations never touch child processes: the scheduler's reconcile is
level-triggered, kills a live child whose task is no longer ``in_progress`` in the store, and
spawns what became ready, whether it runs in this process or another one.

Targeting is exact: every operation names one squad (``cancel`` refuses an empty or inexact
ID) and task actions name one task. Completion by an operator goes through the same
``validate_task_attestation`` as settlement (contract §10.2) and is refused without any status
change when a file squad's task has no valid attestation.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs

from application.attestation_check import AttestationAuditor
from application.canonical import CanonicalIntegrityError
from application.ports import AgentDirectory, Clock, Ids, SquadTransaction, StableReadError, Store
from domain.agents import UnavailableAgent, show_agent_name
from domain.attestation import CoverageState, ProgressCorrupt, parse_progress
from domain.attestation.timestamps import format_rfc3339_millis
from domain.errors import ErrorCode, NotFoundError, SquadOperationError
from domain.spec.limits import MAX_DESCRIPTION_BYTES, MAX_TITLE_BYTES
from domain.spec.plan import TASK_ID_PATTERN as FILE_TASK_ID_PATTERN
from domain.squad.graph import cycle_through, dependents_of, deps_done, descendants_of, is_ready
from domain.squad.ids import SAFE_TASK_ID_PATTERN, TASK_ID_PATTERN, reserved_task_id_problem
from domain.squad.messages import Message, MessageKind
from domain.squad.model import ReviewStatus, Squad, SquadStatus, Task, TaskStatus
from domain.squad.transitions import move_squad, move_task

# Task directory names that are squad-level entries (the canonical copy, sessions, knowledge).
MARKED_DONE_OUTPUT = "Marked done (recovered/admin)"
# The durable marker of an operator's budget reset (resume_task, squad resume, complete_task):
# a system message in the task's history whose text starts with this. A scheduler in any process
# resets its spawn-retry and attestation-rejection counts for the task when it sees a new one.
BUDGETS_RESET = "Retry and attestation-rejection budgets reset"
SYSTEM_SENDER = "squad"
_MAX_PROGRESS_BYTES = 16 * 1024 * 1024

# How add_task describes the reserved names (the rule: domain.squad.ids.reserved_name_problem).
_RESERVED_IDS = "spec, session, knowledge or a Windows device name such as con, in any case"


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
class NewTask:
    """``add_task``'s task: the upstream ``{id, title, description?, agent, depends?,
    inheritContext?, forkFromTask?}``."""

    id: str
    title: str
    agent: str
    description: str = ""
    depends: tuple[str, ...] = ()
    inherit_context: bool = False
    fork_from_task: str | None = None


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


def show_id(value: str) -> str:
    """An ID as a message may show it: quoted once it has a task directory's shape."""
    return f"'{value}'" if SAFE_TASK_ID_PATTERN.match(value) else "(an id not shown)"


def _refuse(code: ErrorCode, message: str) -> SquadOperationError:
    return SquadOperationError(code, message)


def to_status(task: Task, status: TaskStatus, **changes: Any) -> Task:
    """``move_task``, or just the field changes when the task already has ``status``."""
    if task.status is status:
        return attrs.evolve(task, **changes)
    return move_task(task, status, **changes)


def begin_rework(tx: SquadTransaction) -> None:
    """A review or done squad gets new work: back to running, its review into history."""
    squad = tx.squad
    if squad.status in {SquadStatus.REVIEW, SquadStatus.DONE}:
        history = squad.review_history + ((squad.review,) if squad.review is not None else ())
        tx.put_squad(move_squad(squad, SquadStatus.RUNNING, review=None, review_history=history))


def reopen_for_work(tx: SquadTransaction) -> None:
    """Reopen a squad that has work again: review/done rework; a failed squad runs again when
    something is runnable. A paused squad stays paused (the operator's pause wins)."""
    begin_rework(tx)
    squad = tx.squad
    if squad.status is SquadStatus.FAILED:
        tasks = dict(tx.tasks)
        if any(is_ready(tasks, t) for t in tasks.values()):
            tx.put_squad(move_squad(squad, SquadStatus.RUNNING))


def unblock_ready(tx: SquadTransaction) -> None:
    tasks = dict(tx.tasks)
    for candidate in tasks.values():
        if candidate.status is TaskStatus.BLOCKED and deps_done(tasks, candidate):
            tx.put_task(move_task(candidate, TaskStatus.PENDING))


def system_message(ids: Ids, text: str, at: datetime) -> Message:
    return Message(
        id=ids.uuid4_hex(), ts=at, sender=SYSTEM_SENDER, kind=MessageKind.SYSTEM, text=text
    )


def invalidate_descendants(tx: SquadTransaction, task_id: str, ids: Ids, now: datetime) -> None:
    """Every non-cancelled descendant becomes blocked with ``completed`` and ``error`` cleared
    (upstream descendant invalidation); the scheduler stops any live child of theirs."""
    tasks = dict(tx.tasks)
    for descendant_id in descendants_of(tasks, task_id):
        descendant = tx.tasks[descendant_id]
        if descendant.status in {TaskStatus.CANCELLED, TaskStatus.BLOCKED}:
            continue
        tx.put_task(move_task(descendant, TaskStatus.BLOCKED, completed=None, error=None))
        tx.append_message(
            descendant_id,
            system_message(ids, f"Dependency ancestry reopened at {task_id}.", now),
        )


def reopen_with_descendants(
    tx: SquadTransaction, task_id: str, error: str | None, ids: Ids, now: datetime
) -> None:
    """Reopen one task on its own session (pending when its dependencies are done, else
    blocked), re-block its descendants first, and begin rework of a review/done squad."""
    invalidate_descendants(tx, task_id, ids, now)
    tasks = dict(tx.tasks)
    task = tasks[task_id]
    target = TaskStatus.PENDING if deps_done(tasks, task) else TaskStatus.BLOCKED
    tx.put_task(to_status(task, target, completed=None, error=error))
    if error is not None:
        tx.append_message(task_id, system_message(ids, error, now))
    begin_rework(tx)


class SquadOperations:
    """``squad_modify``: add_task, set_dependencies, cancel_task, pause_task, resume_task,
    complete_task, and whole-squad pause, resume and cancel."""

    def __init__(
        self,
        *,
        store: Store,
        auditor: AttestationAuditor,
        agents: AgentDirectory,
        clock: Clock,
        ids: Ids,
    ) -> None:
        self._store = store
        self._auditor = auditor
        self._agents = agents
        self._clock = clock
        self._ids = ids

    def apply(
        self,
        squad_id: str,
        action: Action,
        *,
        task_id: str | None = None,
        depends: Sequence[str] | None = None,
        output: str | None = None,
        task: NewTask | None = None,
    ) -> OperationResult:
        """One ``squad_modify`` call: the CLI and the main Pi's tool both come through here."""
        if action in TASK_ACTIONS and not task_id:
            raise _refuse(ErrorCode.TASK_INPUT_INVALID, f"{action} requires taskId")
        if action is Action.ADD_TASK:
            if task is None:
                raise _refuse(ErrorCode.TASK_INPUT_INVALID, "add_task requires task")
            return self.add_task(squad_id, task)
        assert task_id is not None or action not in TASK_ACTIONS
        if action is Action.SET_DEPENDENCIES:
            if depends is None:
                raise _refuse(
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
        return self.cancel(squad_id)

    # -- helpers ------------------------------------------------------------------------------

    def _require_squad(self, squad_id: str) -> Squad:
        """The squad as committed (``SQUAD_NOT_FOUND``); checked before a transaction, whose
        lock file must never create a directory for a squad that does not exist."""
        return self._store.snapshot(squad_id).squad

    @staticmethod
    def _task(tx: SquadTransaction, task_id: str) -> Task:
        task = tx.tasks.get(task_id)
        if task is None:
            known = ", ".join(sorted(tx.tasks)) or "(none)"
            raise _refuse(
                ErrorCode.TASK_NOT_FOUND,
                f"taskId {show_id(task_id)} is not a task of squad '{tx.squad.id}'; "
                f"its tasks are: {known}",
            )
        return task

    def _note(self, tx: SquadTransaction, task_id: str, text: str, now: datetime) -> None:
        tx.append_message(task_id, system_message(self._ids, text, now))

    def _reset_budgets(self, tx: SquadTransaction, task_id: str, by: Action, now: datetime) -> None:
        self._note(tx, task_id, f"{BUDGETS_RESET} by {by}.", now)

    # -- add_task -----------------------------------------------------------------------------

    def add_task(self, squad_id: str, new: NewTask) -> OperationResult:
        squad = self._require_squad(squad_id)
        self._check_new_task_id(squad, new.id)
        self._check_new_task_text(squad, new)
        now = self._clock.now()
        with self._store.transaction(squad_id) as tx:
            squad = tx.squad
            tasks = dict(tx.tasks)
            if new.id in tasks:
                raise _refuse(
                    ErrorCode.TASK_EXISTS,
                    f"task.id '{new.id}' already exists in squad '{squad_id}'; choose a new id",
                )
            self._check_dependencies(tasks, new.id, new.depends, field="task.depends")
            self._check_agent(squad, new.agent)
            if new.fork_from_task is not None:
                self._check_fork_source(tasks, new)
            task = Task(
                id=new.id,
                title=new.title,
                description=new.description,
                agent=new.agent,
                status=TaskStatus.PENDING,
                depends=new.depends,
                created=now,
                inherit_context=new.inherit_context,
                fork_from_task_id=new.fork_from_task,
                file_spec_delta=squad.spec is not None,
            )
            if not deps_done(tasks, task):
                task = attrs.evolve(task, status=TaskStatus.BLOCKED)
            tx.put_task(task)
            self._note(tx, task.id, f"Task added by the orchestrator ({task.status}).", now)
            reopen_for_work(tx)
            status = tx.squad.status
        text = f"Task '{new.id}' added to squad '{squad_id}' ({task.status})."
        if status is SquadStatus.PAUSED:
            text += " The squad is paused; resume it to run the task."
        return OperationResult(squad_id, Action.ADD_TASK, text, task_id=new.id)

    @staticmethod
    def _check_new_task_id(squad: Squad, task_id: str) -> None:
        reserved = reserved_task_id_problem(task_id)
        why = "" if reserved is None else f"; this one is reserved: {reserved}"
        if squad.spec is not None:
            if not TASK_ID_PATTERN.match(task_id) or reserved is not None:
                raise _refuse(
                    ErrorCode.INVALID_TASK_ID,
                    f"Invalid file-spec task id {show_id(task_id)}: task.id must match "
                    f"{FILE_TASK_ID_PATTERN} (1-64 lowercase letters, digits and inner "
                    f"hyphens) and not be reserved ({_RESERVED_IDS}){why}",
                )
        elif not SAFE_TASK_ID_PATTERN.match(task_id) or reserved is not None:
            raise _refuse(
                ErrorCode.INVALID_TASK_ID,
                f"Invalid task id {show_id(task_id)}: task.id must be 1-128 letters, digits, "
                f"'.', '_' or '-' starting with a letter or digit, and not be reserved "
                f"({_RESERVED_IDS}){why}",
            )

    @staticmethod
    def _check_new_task_text(squad: Squad, new: NewTask) -> None:
        if not new.title.strip():
            raise _refuse(ErrorCode.TASK_INPUT_INVALID, "task.title must be a non-empty string")
        if not new.agent.strip():
            raise _refuse(ErrorCode.TASK_INPUT_INVALID, "task.agent must be a non-empty string")
        if squad.spec is not None:
            for field, value, limit in (
                ("task.title", new.title, MAX_TITLE_BYTES),
                ("task.description", new.description, MAX_DESCRIPTION_BYTES),
            ):
                size = len(value.encode("utf-8"))
                if size > limit:
                    raise _refuse(
                        ErrorCode.TASK_INPUT_INVALID,
                        f"{field} is {size} bytes; at most {limit} are allowed. Put longer "
                        "text in a file the task names instead (nothing is truncated).",
                    )

    @staticmethod
    def _check_dependencies(
        tasks: Mapping[str, Task], task_id: str, depends: Sequence[str], *, field: str
    ) -> None:
        seen: set[str] = set()
        duplicates: set[str] = set()
        for dependency in depends:
            (duplicates if dependency in seen else seen).add(dependency)
        if duplicates:
            raise _refuse(
                ErrorCode.DEPENDENCY_INVALID,
                f"{field} lists {', '.join(show_id(d) for d in duplicates)} more than once; "
                "each dependency may appear once",
            )
        if task_id in seen:
            raise _refuse(
                ErrorCode.DEPENDENCY_INVALID,
                f"{field}: task {show_id(task_id)} cannot depend on itself",
            )
        unknown = [d for d in depends if d not in tasks]
        if unknown:
            known = ", ".join(sorted(tasks)) or "(none)"
            raise _refuse(
                ErrorCode.DEPENDENCY_INVALID,
                f"{field} names unknown task(s): {', '.join(show_id(d) for d in unknown)}; "
                f"existing task ids: {known}",
            )

    def _check_agent(self, squad: Squad, agent: str) -> None:
        catalog = self._agents.catalog(squad.cwd)
        found = catalog.get(agent)
        if isinstance(found, UnavailableAgent):
            enabled = ", ".join(catalog.enabled_names()) or "(none)"
            raise _refuse(
                ErrorCode.AGENT_UNAVAILABLE,
                f"task.agent {show_agent_name(agent)} is {found.reason.value}; "
                f"enabled agents: {enabled}",
            )

    @staticmethod
    def _check_fork_source(tasks: Mapping[str, Task], new: NewTask) -> None:
        source_id = new.fork_from_task
        assert source_id is not None
        if new.inherit_context:
            raise _refuse(
                ErrorCode.TASK_INPUT_INVALID,
                "task.forkFromTask cannot be combined with task.inheritContext; choose one",
            )
        source = tasks.get(source_id)
        if source is None:
            known = ", ".join(sorted(tasks)) or "(none)"
            raise _refuse(
                ErrorCode.TASK_NOT_FOUND,
                f"task.forkFromTask {show_id(source_id)} is not a task of this squad; "
                f"existing task ids: {known}",
            )
        if source.session is None:
            raise _refuse(
                ErrorCode.OPERATION_REFUSED,
                f"task.forkFromTask '{source_id}' has no bound session to fork; "
                "fork from a task that has run",
            )

    # -- set_dependencies ---------------------------------------------------------------------

    def set_dependencies(
        self, squad_id: str, task_id: str, depends: Sequence[str]
    ) -> OperationResult:
        self._require_squad(squad_id)
        depends = tuple(depends)
        with self._store.transaction(squad_id) as tx:
            task = self._task(tx, task_id)
            if task.status in {TaskStatus.IN_PROGRESS, TaskStatus.DONE}:
                raise _refuse(
                    ErrorCode.OPERATION_REFUSED,
                    f"set_dependencies refused: task '{task_id}' is {task.status}; dependencies "
                    "can change only while a task is pending, blocked, failed, suspended or "
                    "cancelled (pause it first, or add a new task)",
                )
            tasks = dict(tx.tasks)
            self._check_dependencies(tasks, task_id, depends, field="depends")
            graph = {t.id: list(t.depends) for t in tasks.values()}
            graph[task_id] = list(depends)
            cycle = cycle_through(graph)
            if cycle is not None:
                raise _refuse(
                    ErrorCode.DEPENDENCY_CYCLE,
                    f"Dependency cycle detected: {' -> '.join(_rotate_to(cycle, task_id))}; "
                    "no dependency was changed",
                )
            updated = attrs.evolve(task, depends=depends)
            tasks[task_id] = updated
            if updated.status in {TaskStatus.PENDING, TaskStatus.BLOCKED}:
                target = TaskStatus.PENDING if deps_done(tasks, updated) else TaskStatus.BLOCKED
                updated = to_status(updated, target)
            tx.put_task(updated)
            now = self._clock.now()
            shown = ", ".join(depends) or "(none)"
            self._note(tx, task_id, f"Dependencies set by the orchestrator: {shown}.", now)
            if is_ready(dict(tx.tasks), updated) and tx.squad.status is not SquadStatus.PAUSED:
                reopen_for_work(tx)
        text = f"Dependencies of '{task_id}' set to [{', '.join(depends)}] ({updated.status})."
        return OperationResult(squad_id, Action.SET_DEPENDENCIES, text, task_id=task_id)

    # -- cancel_task --------------------------------------------------------------------------

    def cancel_task(self, squad_id: str, task_id: str) -> OperationResult:
        self._require_squad(squad_id)
        now = self._clock.now()
        with self._store.transaction(squad_id) as tx:
            task = self._task(tx, task_id)
            if task.status is TaskStatus.CANCELLED:
                return OperationResult(
                    squad_id,
                    Action.CANCEL_TASK,
                    f"Task '{task_id}' is already cancelled; nothing changed.",
                    task_id=task_id,
                    changed=False,
                )
            tasks = dict(tx.tasks)
            live_dependents = [
                tasks[d]
                for d in dependents_of(tasks, task_id)
                if tasks[d].status is not TaskStatus.CANCELLED
            ]
            if live_dependents:
                listing = "\n".join(f"- {d.id} [{d.status}]" for d in live_dependents)
                raise _refuse(
                    ErrorCode.OPERATION_REFUSED,
                    f"cancel_task refused: task '{task_id}' has dependents that are not "
                    f"cancelled:\n{listing}\nRemove the dependency with set_dependencies (or "
                    "cancel those tasks first); nothing was cancelled.",
                )
            tx.put_task(move_task(task, TaskStatus.CANCELLED, error=None, completed=now))
            self._note(tx, task_id, "Task cancelled by the orchestrator.", now)
            squad = tx.squad
            if squad.status is SquadStatus.DONE or (
                squad.status is SquadStatus.REVIEW
                and squad.review is not None
                and squad.review.status is not ReviewStatus.PENDING
            ):
                begin_rework(tx)
        return OperationResult(
            squad_id, Action.CANCEL_TASK, f"Task '{task_id}' cancelled.", task_id=task_id
        )

    # -- pause_task / resume_task -------------------------------------------------------------

    def pause_task(self, squad_id: str, task_id: str) -> OperationResult:
        self._require_squad(squad_id)
        now = self._clock.now()
        with self._store.transaction(squad_id) as tx:
            task = self._task(tx, task_id)
            if task.status is TaskStatus.CANCELLED:
                raise _refuse(
                    ErrorCode.OPERATION_REFUSED,
                    f"pause_task refused: task '{task_id}' is cancelled; resume_task revives it",
                )
            if task.status is TaskStatus.DONE:
                raise _refuse(
                    ErrorCode.OPERATION_REFUSED,
                    f"pause_task refused: task '{task_id}' is done; there is nothing to pause "
                    "(resume_task reopens it)",
                )
            if task.status is TaskStatus.SUSPENDED:
                return OperationResult(
                    squad_id,
                    Action.PAUSE_TASK,
                    f"Task '{task_id}' is already paused; nothing changed.",
                    task_id=task_id,
                    changed=False,
                )
            tx.put_task(move_task(task, TaskStatus.SUSPENDED))
            self._note(tx, task_id, "Task paused by the orchestrator.", now)
        return OperationResult(
            squad_id,
            Action.PAUSE_TASK,
            f"Task '{task_id}' paused (suspended); its session is kept for resume_task.",
            task_id=task_id,
        )

    def resume_task(self, squad_id: str, task_id: str) -> OperationResult:
        self._require_squad(squad_id)
        now = self._clock.now()
        with self._store.transaction(squad_id) as tx:
            task = self._task(tx, task_id)
            if task.status is TaskStatus.IN_PROGRESS:
                return OperationResult(
                    squad_id,
                    Action.RESUME_TASK,
                    f"Task '{task_id}' is already running; no duplicate resume was started.",
                    task_id=task_id,
                    changed=False,
                )
            self._release_invalid_progress(tx.squad, task_id)
            if task.status is TaskStatus.DONE:
                invalidate_descendants(tx, task_id, self._ids, now)
            tasks = dict(tx.tasks)
            target = TaskStatus.PENDING if deps_done(tasks, task) else TaskStatus.BLOCKED
            resumed = to_status(task, target, error=None, completed=None)
            tx.put_task(resumed)
            self._note(tx, task_id, f"Task resumed by the orchestrator ({target}).", now)
            self._reset_budgets(tx, task_id, Action.RESUME_TASK, now)
            reopen_for_work(tx)
            status = tx.squad.status
        text = f"Task '{task_id}' resumed ({target})."
        if status is SquadStatus.PAUSED:
            text += " The squad is paused; resume it to run the task."
        return OperationResult(
            squad_id, Action.RESUME_TASK, text, task_id=task_id, reset_budgets=(task_id,)
        )

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
        with self._auditor.locks.lock(ledger.paths.lock):
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

    # -- complete_task ------------------------------------------------------------------------

    def complete_task(
        self, squad_id: str, task_id: str, output: str | None = None
    ) -> OperationResult:
        self._require_squad(squad_id)
        now = self._clock.now()
        with self._store.transaction(squad_id) as tx:
            task = self._task(tx, task_id)
            if task.status is TaskStatus.DONE:
                return OperationResult(
                    squad_id,
                    Action.COMPLETE_TASK,
                    f"Task '{task_id}' is already done; nothing changed.",
                    task_id=task_id,
                    changed=False,
                )
            if task.status is TaskStatus.CANCELLED:
                raise _refuse(
                    ErrorCode.OPERATION_REFUSED,
                    f"complete_task refused: task '{task_id}' is cancelled; resume_task "
                    "revives it first",
                )
            check = self._auditor.validate_task_attestation(tx.squad, task)
            if not check.valid:
                raise _refuse(
                    ErrorCode.ATTESTATION_INVALID,
                    f"cannot complete: {check.reason or check.status.value} "
                    f"(task '{task_id}' has no valid spec-read attestation; no status changed)",
                )
            accepted = output if output is not None else task.output
            done = move_task(
                task,
                TaskStatus.DONE,
                completed=now,
                error=None,
                output=accepted if accepted is not None else MARKED_DONE_OUTPUT,
            )
            tx.put_task(done)
            tx.append_message(
                task_id,
                Message(
                    id=self._ids.uuid4_hex(),
                    ts=now,
                    sender=SYSTEM_SENDER,
                    kind=MessageKind.DONE,
                    text="Task marked done by the orchestrator",
                ),
            )
            self._reset_budgets(tx, task_id, Action.COMPLETE_TASK, now)
            unblock_ready(tx)
            reopen_for_work(tx)
        return OperationResult(
            squad_id,
            Action.COMPLETE_TASK,
            f"Task '{task_id}' marked done — dependents unblocked and scheduled.",
            task_id=task_id,
            reset_budgets=(task_id,),
        )

    # -- the whole squad ----------------------------------------------------------------------

    def pause(self, squad_id: str) -> OperationResult:
        self._require_squad(squad_id)
        now = self._clock.now()
        with self._store.transaction(squad_id) as tx:
            squad = tx.squad
            if squad.status is SquadStatus.PAUSED:
                return OperationResult(
                    squad_id,
                    Action.PAUSE,
                    f"Squad '{squad_id}' is already paused; nothing changed.",
                    changed=False,
                )
            if squad.status not in {SquadStatus.RUNNING, SquadStatus.FAILED}:
                raise _refuse(
                    ErrorCode.OPERATION_REFUSED,
                    f"pause refused: squad '{squad_id}' is {squad.status}; only a running or "
                    "failed squad can be paused",
                )
            suspended = self._suspend_in_progress(tx, "Task suspended: squad paused.", now)
            tx.put_squad(move_squad(squad, SquadStatus.PAUSED))
        return OperationResult(
            squad_id,
            Action.PAUSE,
            f"Squad '{squad_id}' paused ({len(suspended)} running task(s) suspended).",
        )

    def _suspend_in_progress(self, tx: SquadTransaction, note: str, now: datetime) -> list[str]:
        suspended = []
        for task in list(tx.tasks.values()):
            if task.status is TaskStatus.IN_PROGRESS:
                tx.put_task(move_task(task, TaskStatus.SUSPENDED))
                self._note(tx, task.id, note, now)
                suspended.append(task.id)
        return suspended

    def resume(self, squad_id: str) -> OperationResult:
        self._require_squad(squad_id)
        now = self._clock.now()
        with self._store.transaction(squad_id) as tx:
            resumed: list[str] = []
            for task in sorted(tx.tasks.values(), key=lambda t: t.id):
                if task.status not in {TaskStatus.SUSPENDED, TaskStatus.FAILED}:
                    continue  # cancelled tasks are untouched; only resume_task revives one
                tasks = dict(tx.tasks)
                target = TaskStatus.PENDING if deps_done(tasks, task) else TaskStatus.BLOCKED
                tx.put_task(move_task(task, target, error=None, completed=None))
                self._note(tx, task.id, f"Task resumed with its squad ({target}).", now)
                self._reset_budgets(tx, task.id, Action.RESUME, now)
                resumed.append(task.id)
            squad = tx.squad
            if squad.cancelled_at is not None:
                squad = attrs.evolve(squad, cancelled_at=None)
                tx.put_squad(squad)
            if squad.status in {SquadStatus.PAUSED, SquadStatus.FAILED}:
                tx.put_squad(move_squad(squad, SquadStatus.RUNNING))
            elif (
                squad.status is SquadStatus.REVIEW
                and squad.review is not None
                and squad.review.status is ReviewStatus.FAILED
                and resumed
            ):
                begin_rework(tx)
            tasks = dict(tx.tasks)
            done = sum(1 for t in tasks.values() if t.status is TaskStatus.DONE)
            active = sum(1 for t in tasks.values() if t.status is not TaskStatus.CANCELLED)
            status = tx.squad.status
        return OperationResult(
            squad_id,
            Action.RESUME,
            f"Squad '{squad_id}' resumed ({done}/{active} tasks done; {len(resumed)} task(s) "
            f"resumed; squad {status}).",
            reset_budgets=tuple(resumed),
        )

    def cancel(self, squad_id: str) -> OperationResult:
        """Exact targeting: the squad ID must be given and must name a squad exactly."""
        exact = squad_id.strip()
        if not exact:
            raise _refuse(
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
        with self._store.transaction(exact) as tx:
            squad = tx.squad
            if squad.status is SquadStatus.DONE:
                raise _refuse(
                    ErrorCode.OPERATION_REFUSED,
                    f"cancel refused: squad '{exact}' is done and accepted; nothing runs",
                )
            suspended = self._suspend_in_progress(tx, "Task suspended: squad cancelled.", now)
            if squad.status is not SquadStatus.FAILED:
                squad = move_squad(squad, SquadStatus.FAILED)
            tx.put_squad(attrs.evolve(squad, cancelled_at=now))
        return OperationResult(
            exact,
            Action.CANCEL,
            f"Squad '{exact}' cancelled ({len(suspended)} running task(s) suspended).",
        )


def _rotate_to(cycle: list[str], start: str) -> list[str]:
    """``[a, b, a]`` shown from ``start`` when it is on the cycle: ``[b, a, b]``."""
    ring = cycle[:-1]
    if start not in ring:
        return cycle
    at = ring.index(start)
    rotated = ring[at:] + ring[:at]
    return [*rotated, start]
