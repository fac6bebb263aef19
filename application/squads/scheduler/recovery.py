"""The repairs of a reconcile pass: the canonical spec's integrity (quarantine), done tasks whose
attestation no longer verifies, mail for finished tasks, tasks whose child was lost, and a
failed squad that has runnable work again. Level-triggered: each is safe to repeat."""

from __future__ import annotations

import attrs

from application.attestation_check import AttestationAuditor
from application.canonical import CanonicalSpec
from application.ports import FileWitnesses, SquadTransaction
from application.squads.scheduler.audit_memo import DoneAudits
from application.squads.scheduler.context import Notice, SchedulerContext
from application.squads.scheduler.live_children import LiveChild, stop_all
from application.squads.scheduler.settlement import REJECTION_PREFIX
from application.squads.squad_state import reopen_with_descendants, unblock_ready
from domain.squad.graph import deps_done, is_ready
from domain.squad.messages import MessageKind
from domain.squad.model import SquadStatus, TaskStatus
from domain.squad.transitions import move_squad, move_task, reopen_task


@attrs.define(eq=False)
class Recovery:
    _context: SchedulerContext
    _auditor: AttestationAuditor
    # The scheduler's own live children (the same dict): a quarantine stops them, and a task
    # whose child is live here is neither a zombie nor reopened for mail.
    _live: dict[str, LiveChild]
    # ``None``: every pass audits every done task in full.
    _witnesses: FileWitnesses | None = None
    _audits: DoneAudits = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._audits = DoneAudits(self._auditor, self._context.clock, self._witnesses)

    def repair(self, tx: SquadTransaction) -> bool:
        """The canonical spec's integrity, then every repair of one pass, in one transaction.
        False: the spec failed verification and the squad is quarantined (every child stopped,
        what was done or running reopened); a quarantine clears once the file verifies again.
        The canonical read verified here is the one the pass audits the done tasks against."""
        squad = tx.squad
        canonical: CanonicalSpec | None = None
        if squad.spec is not None:
            canonical, problem = self._auditor.verified_canonical(squad)
            if problem is not None:
                self._quarantine(tx, problem)
                return False
            if squad.quarantine is not None:
                tx.put_squad(attrs.evolve(squad, quarantine=None))
        if canonical is not None:
            self._audit_done_tasks(tx, canonical)
        self._recover_mail(tx)
        self._recover_zombies(tx)
        if tx.squad.config.auto_unblock:
            unblock_ready(tx)
        self._heal(tx)
        return True

    def _quarantine(self, tx: SquadTransaction, problem: str) -> None:
        stop_all(self._live)
        error = f"Canonical spec integrity failure: {problem}"
        for task in tx.tasks.values():
            if task.status in {TaskStatus.DONE, TaskStatus.IN_PROGRESS}:
                tx.put_task(move_task(task, TaskStatus.PENDING, error=error, completed=None))
        if tx.squad.quarantine != error:
            tx.put_squad(attrs.evolve(tx.squad, quarantine=error))
            self._context.notify(Notice("quarantine", self._context.squad_id, error))

    def _audit_done_tasks(self, tx: SquadTransaction, canonical: CanonicalSpec) -> None:
        """A done task whose attestation no longer verifies is reopened with its descendants."""
        squad = tx.squad
        now = self._context.clock.now()
        for task in list(tx.tasks.values()):
            if task.status is not TaskStatus.DONE:
                continue
            check = self._audits.check(squad, task, canonical, now=now)
            if not check.valid:
                self._reopen_with_descendants(
                    tx, task.id, f"{REJECTION_PREFIX}: attestation no longer valid: {check.reason}"
                )

    def _reopen_with_descendants(self, tx: SquadTransaction, task_id: str, error: str) -> None:
        reopen_with_descendants(tx, task_id, error, self._context.ids, self._context.clock.now())

    def _recover_mail(self, tx: SquadTransaction) -> None:
        """A finished task (done or failed) with pending mail reopens; any other task gets its
        mail when its next child starts, so its mailbox is not read here."""
        for task in list(tx.tasks.values()):
            if task.status not in {TaskStatus.DONE, TaskStatus.FAILED}:
                continue
            if task.id in self._live or not any(e.pending for e in tx.mailbox(task.id)):
                continue
            if task.status is TaskStatus.DONE:
                self._reopen_with_descendants(tx, task.id, "Reopened for new mail.")
            else:
                tasks = dict(tx.tasks)
                tx.put_task(reopen_task(task, deps_done=deps_done(tasks, task)))

    def _recover_zombies(self, tx: SquadTransaction) -> None:
        now = self._context.clock.now()
        for task in list(tx.tasks.values()):
            if task.status is TaskStatus.IN_PROGRESS and task.id not in self._live:
                text = "Agent process lost. Resuming on the same durable session."
                tx.put_task(move_task(task, TaskStatus.PENDING))
                tx.append_message(
                    task.id, self._context.squad_message(MessageKind.SYSTEM, text, now)
                )

    def _heal(self, tx: SquadTransaction) -> None:
        squad = tx.squad
        tasks = dict(tx.tasks)
        runnable = any(is_ready(tasks, t) for t in tasks.values())
        if squad.status is SquadStatus.FAILED and runnable and squad.cancelled_at is None:
            tx.put_squad(move_squad(squad, SquadStatus.RUNNING))
