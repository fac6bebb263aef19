"""Task messages (``messages.jsonl``) and mailbox entries (``mailbox.json``), upstream shapes."""

from __future__ import annotations

import enum
from datetime import datetime

import attrs


class MessageKind(enum.StrEnum):
    TEXT = "text"
    TOOL = "tool"
    DONE = "done"
    SYSTEM = "system"
    REPLY = "reply"
    STATUS = "status"
    MESSAGE = "message"


@attrs.frozen
class Message:
    id: str
    ts: datetime
    sender: str
    kind: MessageKind
    text: str
    expects_reply: bool = False


@attrs.frozen
class MailboxEntry:
    id: str
    task_id: str
    enqueued_at: datetime
    message: Message
    delivered_at: datetime | None = None
    replied_at: datetime | None = None
    """When the child's reply to a message that asked for one was forwarded."""

    @property
    def awaiting_reply(self) -> bool:
        return (
            self.message.expects_reply and self.delivered_at is not None and self.replied_at is None
        )

    @property
    def pending(self) -> bool:
        return self.delivered_at is None
