"""Which main Pi session owns a squad: the last one that started a driver for it (``Squad.
session_file``, the owner's Pi session file). A new session revives by itself only the lost work
of squads it owns, or that no session owns (created and driven headless, ``pi-squad create`` /
``run``, or by a Pi session that keeps no session file); another session's are listed with the
command that takes them over. An attested flow's squad (``flowId``) is its flow's alone: never
claimed, revived or listed here."""

from __future__ import annotations

import attrs

from application.ports import LockFactory, Store
from domain.errors import PiSquadError
from domain.squad.model import Squad


def revivable_here(squad: Squad, session_file: str | None) -> bool:
    """Lost work this session may take up without being asked."""
    return squad.flow_id is None and squad.session_file in (None, session_file)


def claim(
    store: Store, squad_id: str, session_file: str | None, locks: LockFactory | None = None
) -> None:
    """Record ``session_file`` as the squad's owner (a session without a file claims nothing),
    unless another process holds its driver lock now: that driver keeps it (this session's
    driver will stop with ``SQUAD_BUSY``), and so does its session.

    Best effort: a squad whose records cannot be read or written is left as it is; the driver
    that follows reports why."""
    if session_file is None:
        return
    if locks is not None and locks.is_held(store.layout(squad_id).driver_lock):
        return
    try:
        with store.transaction(squad_id) as tx:
            squad = tx.squad
            if squad.flow_id is None and squad.session_file != session_file:
                tx.put_squad(attrs.evolve(squad, session_file=session_file))
    except PiSquadError:
        return
