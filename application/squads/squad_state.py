"""Between a store transaction and the pure squad aggregate (``domain/squad/state.py``).

``load`` reads the transaction's squad and tasks into a :class:`SquadState`; ``save`` writes back
exactly what a rule changed (tasks, the squad) and appends the notes it added as system
messages, all inside the caller's one transaction. The shared rework rules the scheduler and
review use are here as one-line wrappers over the aggregate.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from application.ports import Ids, SquadTransaction
from domain.squad.messages import Message
from domain.squad.state import SquadState

SYSTEM_SENDER = "squad"


def load(tx: SquadTransaction) -> SquadState:
    return SquadState(squad=tx.squad, tasks=tx.tasks)


def _save_records(tx: SquadTransaction, before: SquadState, after: SquadState) -> None:
    for task_id, task in after.tasks.items():
        # A rule keeps the very record of every task it leaves alone: skip those unread.
        old = before.tasks.get(task_id)
        if old is not task and old != task:
            tx.put_task(task)
    if after.squad != before.squad:
        tx.put_squad(after.squad)


def save(
    tx: SquadTransaction, before: SquadState, after: SquadState, ids: Ids, now: datetime
) -> None:
    _save_records(tx, before, after)
    for note in after.notes[len(before.notes) :]:
        tx.append_message(
            note.task_id,
            Message(
                id=ids.uuid4_hex(), ts=now, sender=SYSTEM_SENDER, kind=note.kind, text=note.text
            ),
        )


def update(
    tx: SquadTransaction, ids: Ids, now: datetime, rule: Callable[[SquadState], SquadState]
) -> SquadState:
    """Apply one rule to the transaction's squad and write back what it changed."""
    before = load(tx)
    after = rule(before)
    save(tx, before, after, ids, now)
    return after


def _update_silently(tx: SquadTransaction, rule: Callable[[SquadState], SquadState]) -> None:
    """A rule that writes records but no notes (rework, unblocking)."""
    before = load(tx)
    after = rule(before)
    assert after.notes == before.notes, "this rule adds no notes"
    _save_records(tx, before, after)


def begin_rework(tx: SquadTransaction) -> None:
    _update_silently(tx, SquadState.begin_rework)


def unblock_ready(tx: SquadTransaction) -> None:
    _update_silently(tx, SquadState.unblock_ready)


def reopen_with_descendants(
    tx: SquadTransaction, task_id: str, error: str | None, ids: Ids, now: datetime
) -> None:
    update(tx, ids, now, lambda state: state.reopen_with_descendants(task_id, error))
