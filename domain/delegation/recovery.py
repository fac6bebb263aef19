"""Recovering the attempts of a host that is gone (issue 18: "recovery of workers after a host
crash").

A worker runs as a thread of the process that started it (``delegate work`` or the main Pi's
bridge): only that process reads its output and reports it. When that process dies, its
running attempts can never report. Every transaction of any other host checks each attempt
whose resources are still in flight: if its recorded host process is *provably* gone (the
``Processes`` port: no such pid, another process under it, a zombie, or a reboot; never a
guess), the attempt is settled at once instead of waiting for its deadline:

- a running attempt is ``failed`` with ``stopReason`` ``host_lost`` (its lease revoked: its
  worker's bridge is refused every further tool call and model request, and nothing it sends
  can publish);
- its worker process: provably gone → ``settled``; still running with exactly the recorded
  identity → ``uncertain``, stopped once after the transaction (``Processes.terminate``), then
  ``settled`` (still ``uncertain`` if it could not be stopped, until a later transaction sees
  it gone); not identifiable here → ``uncertain`` (its slot stays settling: no new work under
  the fiction that nothing runs); never recorded (the host died
  while starting Pi) → ``settled``: Pi in RPC mode ends when its input closes, and the host's
  end of that pipe closed when the host died.

It is never re-run: the parent decides, with a new ``run`` (the failed job is not an active
equivalent, so it is admitted anew) or by discarding it.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from domain.delegation.decision import Decision, Survivor, unchanged
from domain.delegation.ledger import settled
from domain.delegation.lifecycle import SETTLING, Settlement, State, settle, transition
from domain.delegation.retry import FailureClass, FailureKind
from domain.delegation.session import Attempt, ProcessRecord, SessionState

HOST_LOST = "host_lost"
NEXT_STEP = (
    "its host process is gone, so its worker cannot report; to run it again, send the same "
    "job in a new `delegate run` (and run `pi-squad delegate work`), or discard it"
)
# What the caller reads of a process (the ``Processes`` port's ``alive``): True, that exact
# process runs; False, provably gone; None, cannot tell here.
Alive = Callable[[ProcessRecord], bool | None]


def _lost(alive: Alive, me: ProcessRecord | None, host: ProcessRecord | None) -> bool:
    if host is None or (me is not None and host.identity == me.identity):
        return False  # not recorded (an older state), or this process: its runtime knows
    return alive(host) is False


def recover_lost_hosts(
    state: SessionState, now_ms: int, alive: Alive, me: ProcessRecord | None
) -> Decision[None]:
    """Settle the in-flight attempts of hosts that are gone; the surviving workers are to be
    stopped after the transaction (``Decision.survivors``)."""
    survivors: list[Survivor] = []
    for _, _, attempt in state.attempts():
        if attempt.settlement in SETTLING and _lost(alive, me, attempt.host):
            state, survivor = _recovered(state, attempt, now_ms, alive)
            survivors.extend([survivor] if survivor is not None else [])
    return Decision(state, None, survivors=tuple(survivors))


def _recovered(
    state: SessionState, attempt: Attempt, now_ms: int, alive: Alive
) -> tuple[SessionState, Survivor | None]:
    """One attempt of a lost host: failed if it was running, settled once its worker is
    provably gone; a worker still running is the survivor to stop."""
    running = attempt.state is State.RUNNING
    if running:
        attempt = _failed_with_its_host(attempt)
    worker = attempt.worker
    worker_alive = None if worker is None else alive(worker)
    survivor = None
    if worker is None or worker_alive is False:
        state, attempt = settled(state, attempt, now_ms)
    elif attempt.settlement is Settlement.IN_FLIGHT:
        if worker_alive is True:
            survivor = Survivor(attempt.attempt_id, worker)
        # Until it is stopped (or if it cannot be told): settling, never stopped twice.
        attempt = attrs.evolve(attempt, settlement=settle(attempt.settlement, Settlement.UNCERTAIN))
    state = state.with_event(attempt, now_ms) if running else state.with_attempt(attempt)
    return state, survivor


def _failed_with_its_host(attempt: Attempt) -> Attempt:
    host = attempt.host
    assert host is not None
    return attrs.evolve(
        attempt,
        lease=None,
        state=transition(attempt.state, State.FAILED),
        stop_reason=HOST_LOST,
        failure_kind=str(FailureKind.HOST_LOST),
        failure_class=str(FailureClass.PERMANENT),
        failure_reason="the host process that ran the worker is gone",
        retry="not retried: a lost host's attempt is never re-run by the host",
        problem=f"{HOST_LOST}: pid {host.pid} is gone; {NEXT_STEP}",
    )


def record_stopped(
    state: SessionState, attempt_id: str, stopped: bool, now_ms: int
) -> Decision[None]:
    """What stopping a lost host's surviving worker achieved."""
    found = state.find_attempt(attempt_id)
    if found is None or not stopped or found[2].settlement is not Settlement.UNCERTAIN:
        return unchanged(state, None)
    state, attempt = settled(state, found[2], now_ms)
    return unchanged(state.with_attempt(attempt), None)
