"""Messages to a task (upstream ``queueTaskMessage`` and ``sendHumanMessage``, §2 and §4).

A message is queued first, always: one locked transaction adds it to ``mailbox.json`` and
appends it, with its ID, to ``messages.jsonl``. Queuing is idempotent by message ID: a repeated
ID changes nothing. Delivery then happens one of two ways:

- a live child is steered with the message, and the entry is acknowledged (``deliveredAt``)
  only when the child accepted it; a refused steer leaves it pending, and the scheduler reopens
  the task on the same session when it settles;
- otherwise the scheduler's reconcile delivers it: a done or failed task with pending mail is
  reopened (a done task re-blocks its descendants first, a review squad goes back to running)
  and the mail is part of the next first prompt, acknowledged at spawn. Suspended and cancelled
  tasks keep their mail pending and are not reopened by it.

Nothing here truncates a message.
"""

from __future__ import annotations

import enum
import re

import attrs

from application.ports import ChildHandle, Clock, Ids, Store
from domain.errors import ErrorCode, SquadOperationError
from domain.squad.messages import MailboxEntry, Message, MessageKind
from domain.squad.model import TaskStatus

ORCHESTRATOR = "orchestrator"
MESSAGE_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}\Z")
_SENDER_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}\Z")


def steer_text(entry: MailboxEntry) -> str:
    """What a live child is told (upstream wording)."""
    message = entry.message
    if message.sender != ORCHESTRATOR:
        return f"[squad] Message from {message.sender}:\n{message.text}"
    if message.expects_reply:
        return (
            f"[squad] Main orchestrator requests a direct response:\n{message.text}\n\n"
            "Reply directly in your next message; it is forwarded to the main orchestrator and "
            "recorded in the task's history."
        )
    return f"[squad] Main orchestrator message:\n{message.text}"


@attrs.frozen
class QueuedMessage:
    entry: MailboxEntry
    created: bool
    """False when the message ID was already queued (nothing changed)."""


class Delivery(enum.StrEnum):
    DELIVERED = "delivered"  # a live child accepted the steer; the entry is acknowledged
    QUEUED = "queued"  # pending: the scheduler delivers it (reopening the task if needed)
    HELD = "held"  # pending on a cancelled or suspended task: delivered when it runs again


@attrs.frozen
class SendOutcome:
    entry: MailboxEntry
    delivery: Delivery

    @property
    def text(self) -> str:
        if self.delivery is Delivery.DELIVERED:
            return f"Message delivered to task '{self.entry.task_id}'."
        if self.delivery is Delivery.HELD:
            return (
                f"Message queued for task '{self.entry.task_id}'; the task is paused or "
                "cancelled, so it is delivered when the task is resumed."
            )
        return f"Message queued for when the agent of task '{self.entry.task_id}' starts."


@attrs.frozen(kw_only=True)
class Mailbox:
    _store: Store
    _clock: Clock
    _ids: Ids

    def queue_message(
        self,
        squad_id: str,
        task_id: str,
        text: str,
        *,
        sender: str = ORCHESTRATOR,
        expects_reply: bool = True,
        message_id: str | None = None,
    ) -> QueuedMessage:
        if not text.strip():
            raise SquadOperationError(
                ErrorCode.MESSAGE_INVALID, "message must contain non-whitespace text"
            )
        if message_id is not None and not MESSAGE_ID_PATTERN.match(message_id):
            raise SquadOperationError(
                ErrorCode.MESSAGE_INVALID,
                "messageId must be 1-128 letters, digits, '.', '_', ':' or '-', starting with "
                "a letter or digit",
            )
        if not _SENDER_PATTERN.match(sender):
            raise SquadOperationError(
                ErrorCode.MESSAGE_INVALID,
                "sender must be 1-64 letters, digits, '.', '_', '@' or '-'",
            )
        self._store.snapshot(squad_id)  # SQUAD_NOT_FOUND before any lock file is made
        identifier = message_id if message_id is not None else self._ids.uuid4_hex()
        with self._store.transaction(squad_id) as tx:
            if task_id not in tx.tasks:
                known = ", ".join(sorted(tx.tasks)) or "(none)"
                raise SquadOperationError(
                    ErrorCode.TASK_NOT_FOUND,
                    f"Task not found: taskId is not a task of squad '{squad_id}'; its tasks "
                    f"are: {known}",
                )
            entries = tx.mailbox(task_id)
            for existing in entries:
                if existing.id == identifier:
                    return QueuedMessage(existing, created=False)
            now = self._clock.now()
            message = Message(
                id=identifier,
                ts=now,
                sender=sender,
                kind=MessageKind.MESSAGE,
                text=text,
                expects_reply=expects_reply,
            )
            entry = MailboxEntry(id=identifier, task_id=task_id, enqueued_at=now, message=message)
            tx.put_mailbox(task_id, (*entries, entry))
            tx.append_message(task_id, message)
        return QueuedMessage(entry, created=True)

    def deliver_live(
        self, squad_id: str, task_id: str, handle: ChildHandle, message_id: str
    ) -> bool:
        """Steer ``handle`` (the task's live child) with a pending entry; acknowledge it only
        when the child accepted. ``True`` when the entry is delivered (now or before)."""
        if handle.task_id != task_id:
            raise ValueError("the handle belongs to another task")
        entry = self._entry(squad_id, task_id, message_id)
        if not entry.pending:
            return True
        if not handle.alive() or not handle.steer(steer_text(entry)):
            return False  # still pending: the settlement of this child reopens the task
        self.acknowledge(squad_id, task_id, (message_id,))
        return True

    def acknowledge(self, squad_id: str, task_id: str, message_ids: tuple[str, ...]) -> int:
        """Set ``deliveredAt`` on the pending entries named; never deletes. How many changed
        (an already delivered entry counts 0)."""
        now = self._clock.now()
        with self._store.transaction(squad_id) as tx:
            entries = tx.mailbox(task_id)
            changed = 0
            updated = []
            for entry in entries:
                if entry.id in message_ids and entry.pending:
                    updated.append(attrs.evolve(entry, delivered_at=now))
                    changed += 1
                else:
                    updated.append(entry)
            if changed:
                tx.put_mailbox(task_id, tuple(updated))
        return changed

    def send(
        self,
        squad_id: str,
        task_id: str,
        text: str,
        *,
        live: ChildHandle | None = None,
        sender: str = ORCHESTRATOR,
        expects_reply: bool = True,
        message_id: str | None = None,
    ) -> SendOutcome:
        """Queue, then deliver to ``live`` (the task's current child, if this process has
        one). Without a live child the scheduler delivers it on its next reconcile."""
        queued = self.queue_message(
            squad_id,
            task_id,
            text,
            sender=sender,
            expects_reply=expects_reply,
            message_id=message_id,
        )
        entry = queued.entry
        if not entry.pending:
            return SendOutcome(entry, Delivery.DELIVERED)
        status = self._store.snapshot(squad_id).tasks[task_id].status
        if status in {TaskStatus.CANCELLED, TaskStatus.SUSPENDED}:
            return SendOutcome(entry, Delivery.HELD)
        if (
            live is not None
            and live.alive()
            and self.deliver_live(squad_id, task_id, live, entry.id)
        ):
            return SendOutcome(self._entry(squad_id, task_id, entry.id), Delivery.DELIVERED)
        return SendOutcome(entry, Delivery.QUEUED)

    def _entry(self, squad_id: str, task_id: str, message_id: str) -> MailboxEntry:
        for entry in self._store.mailbox(squad_id, task_id):
            if entry.id == message_id:
                return entry
        raise SquadOperationError(
            ErrorCode.MESSAGE_INVALID,
            f"no mailbox entry with that messageId for task '{task_id}' of squad '{squad_id}'",
        )
