"""``pi-squad delegate work``: the process that runs a session's admitted jobs on real Pi.

``delegate run`` (and ``follow-up``) admit and queue; this process starts the queued jobs as
``pi --mode rpc`` workers (``adapters.delegation.workers``) up to the grant's concurrency, and
stays until none of the session's attempts is queued or running and its own workers have
ended (run-and-wait: it is the host that holds the workers' leases while they run, seed §8).
Every 0.25 s it re-reads the session: a deadline passed is applied (the worker is killed), a
lease another process revoked (``delegate cancel``) kills that worker, and a freed slot starts
the next job. It prints one JSON summary. It must be given the same grant flags as ``run``:
under another grant it is refused (``DELEGATE_GRANT_CHANGED``) before any worker starts. A
policy file edited while it runs changes nothing until a person runs ``delegate renew``.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from adapters.delegation.workers import sweep_revoked
from application.ports import GrantSource
from domain.delegation.lifecycle import State
from domain.delegation.upkeep import GrantUse
from domain.delegation.worker_side import live_attempt
from entrypoints.container import CliContainer
from entrypoints.roles import DispatchingHost

POLL_SECONDS = 0.25


def run_workers(
    args: argparse.Namespace, container: CliContainer, grants: GrantSource, cwd: str
) -> dict[str, Any]:
    workers: DispatchingHost = container.delegation.workers(
        session=args.session, grants=grants, cwd=cwd
    )
    host, runtime = workers.host, workers.runtime
    store = container.delegation.store()
    try:
        host.upkeep(GrantUse.REQUEST)  # refused under another grant, before any worker starts
        while True:
            # Deadlines applied, revoked workers asked to stop, freed slots refilled.
            host.upkeep()
            state = store.snapshot(args.session)

            def live(lease: Any, state: Any = state) -> bool:
                return state is not None and live_attempt(state, lease) is not None

            if sweep_revoked(runtime, live):
                host.dispatch()
            active = state is not None and any(
                a.state in (State.QUEUED, State.RUNNING) for _, _, a in state.attempts()
            )
            if not active and not runtime.running():
                break
            if runtime.running():
                runtime.wait_idle(POLL_SECONDS)
            else:
                time.sleep(POLL_SECONDS)
    finally:
        runtime.stop_all()
    return {"op": "work", "session": args.session, "started": list(runtime.started)}
