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

from application.delegation.ledger import log_event, release
from application.ports import Processes, WorkerLease
from domain.delegation.lifecycle import Settlement, State, settle, transition
from domain.delegation.policy import Grant
from domain.delegation.retry import FailureClass, FailureKind
from domain.delegation.session import Attempt, ProcessRecord, SessionState

HOST_LOST = "host_lost"
NEXT_STEP = (
    "its host process is gone, so its worker cannot report; to run it again, send the same "
    "job in a new `delegate run` (and run `pi-squad delegate work`), or discard it"
)


def _lost(processes: Processes, me: ProcessRecord | None, host: ProcessRecord | None) -> bool:
    if host is None or (me is not None and host.identity == me.identity):
        return False  # not recorded (an older state), or this process: its runtime knows
    return processes.alive(host) is False


def recover_lost_hosts(
    state: SessionState, now_ms: int, processes: Processes, me: ProcessRecord | None
) -> list[tuple[str, ProcessRecord]]:
    """Settle the in-flight attempts of hosts that are gone; the surviving workers to stop
    after the transaction, as ``(attemptId, worker process)``."""
    survivors: list[tuple[str, ProcessRecord]] = []
    for batch, job, attempt in state.attempts():
        if attempt.settlement not in (Settlement.IN_FLIGHT, Settlement.UNCERTAIN):
            continue
        if not _lost(processes, me, attempt.host):
            continue
        if attempt.state is State.RUNNING:
            attempt.lease = None
            attempt.state = transition(attempt.state, State.FAILED)
            attempt.stop_reason = HOST_LOST
            attempt.failure_kind = str(FailureKind.HOST_LOST)
            attempt.failure_class = str(FailureClass.PERMANENT)
            attempt.failure_reason = "the host process that ran the worker is gone"
            attempt.retry = "not retried: a lost host's attempt is never re-run by the host"
            host = attempt.host
            assert host is not None
            attempt.problem = f"{HOST_LOST}: pid {host.pid} is gone; {NEXT_STEP}"
            log_event(batch, job, attempt, now_ms)
        worker = attempt.worker
        alive = None if worker is None else processes.alive(worker)
        if worker is None or alive is False:
            _settle(state, attempt, now_ms)
        elif attempt.settlement is Settlement.IN_FLIGHT:
            if alive is True:
                survivors.append((attempt.attempt_id, worker))
            # Until it is stopped (or if it cannot be told): settling, never stopped twice.
            attempt.settlement = settle(attempt.settlement, Settlement.UNCERTAIN)
    return survivors


def _settle(state: SessionState, attempt: Attempt, now_ms: int) -> None:
    attempt.settlement = settle(attempt.settlement, Settlement.SETTLED)
    attempt.settled_at_ms = now_ms
    release(state, attempt)


def record_stopped(
    attempt_id: str,
    stopped: bool,
    state: SessionState,
    _grant: Grant,
    now_ms: int,
    _revoked: list[WorkerLease],
) -> None:
    """What stopping a lost host's surviving worker achieved (a transaction step)."""
    found = state.find_attempt(attempt_id)
    if found is None:
        return
    attempt = found[2]
    if stopped and attempt.settlement is Settlement.UNCERTAIN:
        _settle(state, attempt, now_ms)
