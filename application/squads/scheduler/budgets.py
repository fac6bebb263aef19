"""What each task has spent in this process: unexpected exits, attestation rejections, the
hold before its next retry, and whether its escalation was already sent."""

from __future__ import annotations

from datetime import datetime

import attrs

from application.ports import Store
from domain.squad.messages import MessageKind
from domain.squad.state import BUDGETS_RESET


@attrs.define
class RetryBudgets:
    _exits: dict[str, int] = attrs.field(factory=dict)
    _rejections: dict[str, int] = attrs.field(factory=dict)
    _not_before: dict[str, float] = attrs.field(factory=dict)
    _escalated: set[str] = attrs.field(factory=set)
    # When each task first spent budget here: a durable reset after that time clears it.
    _spent_since: dict[str, datetime] = attrs.field(factory=dict)

    def count_exit(self, task_id: str, at: datetime) -> int:
        """One more unexpected exit; returns how many there have been."""
        self._exits[task_id] = self._exits.get(task_id, 0) + 1
        self._spent_since.setdefault(task_id, at)
        return self._exits[task_id]

    def count_rejection(self, task_id: str, at: datetime) -> int:
        """One more rejected attestation; returns how many there have been."""
        self._rejections[task_id] = self._rejections.get(task_id, 0) + 1
        self._spent_since.setdefault(task_id, at)
        return self._rejections[task_id]

    def first_escalation(self, task_id: str) -> bool:
        """True once per budget: the escalation notice is sent only the first time."""
        if task_id in self._escalated:
            return False
        self._escalated.add(task_id)
        return True

    def hold(self, task_id: str, until: float) -> None:
        """No retry of the task before the monotonic time ``until``."""
        self._not_before[task_id] = until

    def take_due(self, task_id: str, now: float) -> bool:
        """False while the task's retry is held; once due, the hold is dropped."""
        if self._not_before.get(task_id, 0.0) > now:
            return False
        self._not_before.pop(task_id, None)
        return True

    def next_due(self) -> float:
        """When the earliest held retry becomes due (infinity when none is held)."""
        return min(self._not_before.values(), default=float("inf"))

    def reset(self, task_id: str) -> None:
        self._exits.pop(task_id, None)
        self._rejections.pop(task_id, None)
        self._not_before.pop(task_id, None)
        self._escalated.discard(task_id)
        self._spent_since.pop(task_id, None)

    def apply_durable_resets(self, store: Store, squad_id: str) -> None:
        """Another process's ``resume_task`` leaves a durable marker in the task's history; only
        tasks that have spent budget here are checked, so this stays cheap."""
        for task_id, since in list(self._spent_since.items()):
            for message in reversed(store.messages(squad_id, task_id)):
                if message.ts <= since:
                    break
                if message.kind is MessageKind.SYSTEM and message.text.startswith(BUDGETS_RESET):
                    self.reset(task_id)
                    break
