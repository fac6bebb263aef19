"""What every part of one squad's scheduler shares: the squad, its store, time, ids, and where
notices for the orchestrator go."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import attrs

from application.ports import Clock, Ids, Store
from domain.squad.messages import Message, MessageKind

SQUAD_SENDER = "squad"


@attrs.frozen
class Notice:
    """Something the orchestrator should hear about (delivered into the main session)."""

    kind: str
    squad_id: str
    text: str
    task_id: str | None = None


@attrs.frozen
class SchedulerContext:
    squad_id: str
    store: Store
    clock: Clock
    ids: Ids
    notify: Callable[[Notice], None]

    def message(self, sender: str, kind: MessageKind, text: str, at: datetime) -> Message:
        return Message(id=self.ids.uuid4_hex(), ts=at, sender=sender, kind=kind, text=text)

    def squad_message(self, kind: MessageKind, text: str, at: datetime) -> Message:
        """A message the scheduler itself writes into a task's history."""
        return self.message(SQUAD_SENDER, kind, text, at)
