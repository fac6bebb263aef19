"""One delegation session's transactions: load, decide, save, then the effects.

Every operation of the `delegate` host is one transaction of the session store (its lock, the
state loaded, one atomic write). The call's grant is checked against the session's first
(``domain/delegation/upkeep.py``, ``GrantUse``: under another grant a read answers without
writing, a request is refused, and nothing but ``renew`` changes the generation); the state is
then brought up to date (deadlines, lost hosts, changed sources) and the operation decides; a
refusal raises before the write, so a refused request reserves and records nothing. Calls into
the worker runtime and the processes happen after the transaction, never under the lock: a lease
is revoked in the state before its worker is asked to stop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import attrs

from application.delegation.capture import changed_sources
from application.ports import (
    Clock,
    DelegationStore,
    FileSystem,
    GrantSource,
    Processes,
    Wakeup,
    WorkerLease,
    WorkerRuntime,
)
from domain.delegation.decision import Decision, Survivor
from domain.delegation.ledger import new_state, record_settlement
from domain.delegation.policy import Grant
from domain.delegation.recovery import record_stopped
from domain.delegation.session import ProcessRecord, SessionState
from domain.delegation.upkeep import GrantUse, brought_up_to_date, grant_changed, holds

T = TypeVar("T")
Decide = Callable[[SessionState, Grant, int], Decision[T]]


@attrs.frozen
class SessionPorts:
    """What a session's transactions, and the host that runs them, read and act on."""

    store: DelegationStore
    runtime: WorkerRuntime
    grants: GrantSource
    fs: FileSystem
    clock: Clock
    wakeup: Wakeup
    # Recognises a lost host's attempts (domain/delegation/recovery.py); None: no recovery.
    processes: Processes | None = None


class SessionTransactions:
    def __init__(self, session: str, ports: SessionPorts) -> None:
        self.session = session
        self._ports = ports
        processes = ports.processes
        self.me: ProcessRecord | None = processes.me() if processes is not None else None

    def now_ms(self) -> int:
        return int(self._ports.clock.now().timestamp() * 1000)

    def run(self, decide: Decide[T], use: GrantUse = GrantUse.HOST) -> T:
        """One transaction: the grant checked (``use``), the state brought up to date,
        ``decide`` asked, the decision saved; then its revoked workers are asked to stop and a
        lost host's survivors stopped. Only a person's request or renewal writes a session never
        written; a read under another grant is answered from the state as it is, unwritten."""
        grant = self._ports.grants.grant()
        with self._ports.store.transaction(self.session) as transaction:
            now = self.now_ms()
            state = transaction.state
            if state is None:
                state = new_state(self.session, grant)
                if not use.creates():
                    return decide(state, grant, now).answer
            elif not holds(state, grant):
                if use is GrantUse.READ:
                    return decide(state, grant, now).answer
                if use is GrantUse.REQUEST:
                    raise grant_changed(state, grant)
            processes = self._ports.processes
            upkeep = brought_up_to_date(
                state,
                now,
                changed=changed_sources(self._ports.fs, state.sources),
                alive=processes.alive if processes is not None else None,
                me=self.me,
            )
            decision = upkeep.then(decide(upkeep.state, grant, now))
            transaction.save(decision.state)
        self._settle_revoked(decision.revoked)
        self._stop_survivors(decision.survivors)
        return decision.answer

    def _settle_revoked(self, revoked: tuple[WorkerLease, ...]) -> None:
        """Ask each revoked worker to stop; until one confirms, its slot stays settling."""
        for lease in revoked:
            try:
                confirmed = self._ports.runtime.cancel(lease)
            except Exception:  # a runtime that cannot answer has not confirmed anything
                confirmed = False
            self.run(_settlement(lease, confirmed))
        if revoked:
            self._ports.wakeup.notify()

    def _stop_survivors(self, survivors: tuple[Survivor, ...]) -> None:
        """A lost host's worker still running, its identity exactly as recorded: stopped here
        (outside the lock), then its settlement recorded."""
        processes = self._ports.processes
        if processes is None:
            return
        for survivor in survivors:
            try:
                stopped = processes.terminate(survivor.worker)
            except Exception:  # not confirmed: the slot stays settling
                stopped = False
            self.run(_stopped(survivor.attempt_id, stopped))
        if survivors:
            self._ports.wakeup.notify()


def _settlement(lease: WorkerLease, confirmed: bool) -> Decide[None]:
    return lambda state, _grant, now: record_settlement(state, lease, confirmed, now)


def _stopped(attempt_id: str, stopped: bool) -> Decide[None]:
    return lambda state, _grant, now: record_stopped(state, attempt_id, stopped, now)
