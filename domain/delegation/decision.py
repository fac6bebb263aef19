"""What every delegation transition returns: a decision, as the squads' operations do
(``domain/squad/decisions.py``).

A transition takes the session's frozen state (and the facts the caller read: the grant, the
time, which sources changed, which processes live) and returns the new state, the answer the
caller hands on, and the effects that must wait until the state is written: the leases whose
workers are to be stopped, and a lost host's surviving workers to terminate. The application
loads the state, asks for a decision and saves ``decision.state`` in one store transaction, then
carries out the effects outside the lock (``application/delegation/transactions.py``).
"""

from __future__ import annotations

from typing import Generic, TypeVar

import attrs

from domain.delegation.session import ProcessRecord, SessionState
from domain.delegation.worker_protocol import WorkerLease

T = TypeVar("T")
U = TypeVar("U")


@attrs.frozen
class Survivor:
    """A lost host's worker still running with its recorded identity: stopped after the
    transaction, then its settlement recorded."""

    attempt_id: str
    worker: ProcessRecord


@attrs.frozen
class Decision(Generic[T]):
    state: SessionState
    answer: T
    # Workers to ask to stop once the state is written; until one confirms, its slot settles.
    revoked: tuple[WorkerLease, ...] = ()
    survivors: tuple[Survivor, ...] = ()

    def then(self, later: Decision[U]) -> Decision[U]:
        """``later`` (decided on this decision's state) with this decision's effects first."""
        return Decision(
            later.state,
            later.answer,
            self.revoked + later.revoked,
            self.survivors + later.survivors,
        )


def unchanged(state: SessionState, answer: T) -> Decision[T]:
    """An answer that changes nothing."""
    return Decision(state, answer)
