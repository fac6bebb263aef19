"""How a child's end is judged: a settled child's task is accepted only with a valid spec-read
attestation (contract §10) and otherwise rejected within a budget; an unexpected exit is
retried with backoff on the same session, then failed."""

from __future__ import annotations

import attrs

from application.attestation_check import AttestationAuditor
from application.ports import Exited, LockTimeout, Settled
from application.squads.qa import plan_rework
from application.squads.scheduler.budgets import RetryBudgets
from application.squads.scheduler.context import Notice, SchedulerContext
from application.squads.squad_state import unblock_ready
from domain.squad.messages import MessageKind
from domain.squad.model import Squad, Task, TaskStatus
from domain.squad.transitions import move_task

DEFAULT_BACKOFF = (2.0, 10.0, 30.0, 60.0, 120.0)
MAX_ATTESTATION_REJECTIONS = 3
REJECTION_PREFIX = "Completion rejected"


@attrs.define(eq=False)
class Settlement:
    _context: SchedulerContext
    _auditor: AttestationAuditor
    _budgets: RetryBudgets
    _backoff: tuple[float, ...]

    def settle(self, event: Settled) -> None:
        context = self._context
        # A read-only transaction reads the squad and this task's record alone (a snapshot
        # would check every pinned record); every later change re-reads under the lock.
        with context.store.transaction(context.squad_id) as tx:
            squad, task = tx.squad, tx.tasks.get(event.task_id)
        if task is None or task.status in {TaskStatus.CANCELLED, TaskStatus.SUSPENDED}:
            return
        if task.status is not TaskStatus.IN_PROGRESS:
            return
        check = self._auditor.validate_task_attestation(squad, task)
        if not check.valid:
            reason = check.reason or "attestation invalid"
            if check.ungrounded:
                reason += self._set_aside_ungrounded(squad, task)
            self._reject(task, reason)
            return
        if any(entry.pending for entry in context.store.mailbox(context.squad_id, task.id)):
            self._reopen_for_mail(task)
            return
        output = self._candidate_output(task)
        if event.turn_count < 1 or (event.tool_call_count == 0 and not output):
            self.unexpected_exit(
                Exited(task.id, event.child_id, None, "settled without any work", unexpected=True)
            )
            return
        self._accept(task, output)

    def _set_aside_ungrounded(self, squad: Squad, task: Task) -> str:
        """Never trusted by the parent, so never by the task's next child either: the ledger
        moves the records aside. What the rejection must add: an unsafe lock the child left
        (set aside too), or why nothing could be set aside. The task is rejected either way;
        the driver never waits on, nor follows, anything in the task's ledger."""
        try:
            note = self._auditor.ledger(squad, task.id).set_aside_ungrounded()
        except (LockTimeout, OSError) as exc:  # LockRefused again: planted once more meanwhile
            return f"; its ledger was not set aside: {exc}"
        return "" if note is None else f"; {note}"

    def _candidate_output(self, task: Task) -> str:
        """The agent's text since the last rejection; never copied anywhere unless accepted."""
        history = self._context.store.messages(self._context.squad_id, task.id)
        start = 0
        for position, message in enumerate(history):
            if message.kind is MessageKind.SYSTEM and message.text.startswith(REJECTION_PREFIX):
                start = position + 1
        texts = [
            m.text
            for m in history[start:]
            if m.sender == task.agent and m.kind in {MessageKind.TEXT, MessageKind.DONE}
        ]
        return "\n".join(texts).strip()

    def _reject(self, task: Task, reason: str) -> None:
        context = self._context
        now = context.clock.now()
        count = self._budgets.count_rejection(task.id, now)
        text = f"{REJECTION_PREFIX}: missing or invalid spec-read attestation: {reason}"
        with context.store.transaction(context.squad_id) as tx:
            current = tx.tasks[task.id]
            if current.status is not TaskStatus.IN_PROGRESS:
                return
            if count >= MAX_ATTESTATION_REJECTIONS:
                error = f"Attestation rejected {count}x: {reason}"
                tx.put_task(move_task(current, TaskStatus.SUSPENDED, error=error, completed=None))
            else:
                # Same task-owned session: the binding is kept, so the next spawn resumes it.
                tx.put_task(move_task(current, TaskStatus.PENDING, error=text, completed=None))
            tx.append_message(task.id, context.squad_message(MessageKind.SYSTEM, text, now))
        if count >= MAX_ATTESTATION_REJECTIONS and self._budgets.first_escalation(task.id):
            context.notify(
                Notice(
                    "escalation",
                    context.squad_id,
                    f"Task {task.id} settled {count} times without a valid spec-read "
                    f"attestation and is suspended: {reason}. Resume it with resume_task.",
                    task.id,
                )
            )

    def _reopen_for_mail(self, task: Task) -> None:
        with self._context.store.transaction(self._context.squad_id) as tx:
            current = tx.tasks[task.id]
            if current.status is TaskStatus.IN_PROGRESS:
                tx.put_task(move_task(current, TaskStatus.PENDING))

    def _accept(self, task: Task, output: str) -> None:
        context = self._context
        now = context.clock.now()
        with context.store.transaction(context.squad_id) as tx:
            current = tx.tasks[task.id]
            if current.status is not TaskStatus.IN_PROGRESS:
                return
            done = move_task(
                current,
                TaskStatus.DONE,
                completed=now,
                error=None,
                output=output or "Task completed",
            )
            tx.put_task(done)
            tx.append_message(
                task.id, context.squad_message(MessageKind.DONE, "Task completed", now)
            )
            self._budgets.reset(task.id)
            rework = plan_rework(tx.squad, tx.tasks, done, now=now)
            for new_task in rework.tasks:
                tx.put_task(new_task)
            if rework.failure is not None:
                tx.put_task(
                    move_task(done, TaskStatus.FAILED, error=rework.failure, completed=None)
                )
            for text in rework.escalations:
                context.notify(Notice("escalation", context.squad_id, text, task.id))
            # With autoUnblock the reconcile pass that follows every handled batch of events
            # unblocks (level-triggered, in its one transaction); reading every task record
            # here as well made each acceptance a scan of the whole squad.
            if not rework.tasks and not tx.squad.config.auto_unblock:
                unblock_ready(tx)

    def unexpected_exit(self, event: Exited) -> None:
        context = self._context
        now = context.clock.now()
        attempts = self._budgets.count_exit(event.task_id, now)
        with context.store.transaction(context.squad_id) as tx:
            task = tx.tasks.get(event.task_id)
            if task is None or task.status is not TaskStatus.IN_PROGRESS:
                return
            detail = event.stderr_tail.strip()[-2000:] if event.stderr_tail else ""
            if attempts <= len(self._backoff):
                delay = self._backoff[attempts - 1]
                self._budgets.hold(task.id, context.clock.monotonic() + delay)
                text = (
                    f"Agent exited unexpectedly (code {event.exit_code}); retry {attempts} of "
                    f"{len(self._backoff)} in {delay:g} s on the same session. {detail}".strip()
                )
                tx.put_task(move_task(task, TaskStatus.PENDING))
            else:
                text = (
                    f"Agent exited unexpectedly {attempts} times; giving up. Use resume_task to "
                    f"try again. {detail}".strip()
                )
                tx.put_task(move_task(task, TaskStatus.FAILED, error=text))
                context.notify(Notice("task_failed", context.squad_id, text, task.id))
            tx.append_message(task.id, context.squad_message(MessageKind.SYSTEM, text, now))
