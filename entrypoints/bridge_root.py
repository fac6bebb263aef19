"""The hand-wired composition root of ``pi-squad bridge``: what its process runs.

Every child Pi process starts a bridge and waits for its ``hello`` before the session starts,
so a child's bridge start-up is paid per task. ``dependency_injector`` (and the ``asyncio`` it
imports) cost ~90 ms of it from source, ~50 ms from cached bytecode (``python -X importtime``,
``bench.child_start``): the child role is wired here by hand instead, over the operating
system's adapters (the ones ``entrypoints.concerns.system.SystemAdapters`` provides). The main
role still comes from its container (``main_bridge_container.py``), imported only when
``--role main`` is served in the user's own Pi. ``BridgeContainer``, which tests and bench/
override, uses ``process_role`` and ``main_bridge_role`` from here and the same
``bridge_role_for`` and ``child_role_for``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from adapters.bridge.roles import BridgeRole, RequestedRole, bridge_role_for
from adapters.fs.platform import native_file_system
from application.child.closed import closed_role_for
from application.ports import FileSystem, PiEvents
from domain.child_environment import (
    ChildEnvironment,
    DelegationWorkerChild,
    ProcessRole,
    SpecChild,
)


def process_role(environ: Mapping[str, str], fs: FileSystem) -> ProcessRole:
    """What this Pi process is, from its environment alone (contract §6)."""
    return ChildEnvironment.from_environ(environ, fs.flavour)


def main_bridge_role(environ: Mapping[str, str]) -> BridgeRole:
    # Deferred: the main role pulls in the whole squad runtime and its container, which no
    # child needs.
    from entrypoints.main_bridge_container import build_main_bridge_role  # noqa: PLC0415

    return build_main_bridge_role(environ)


def worker_events(
    role: DelegationWorkerChild, fs: FileSystem, environ: Mapping[str, str]
) -> PiEvents:
    """A delegated worker's broker over the host's store (``$PI_SQUAD_ROOT/delegation``)."""
    from adapters.delegation.store import FileDelegationStore  # noqa: PLC0415
    from adapters.store.lock import FastenersLockFactory  # noqa: PLC0415
    from adapters.store.squad_root import resolve_squad_root  # noqa: PLC0415
    from adapters.system.clock import SystemClock  # noqa: PLC0415
    from application.child.worker import WorkerRole  # noqa: PLC0415
    from application.delegation.broker import EvidenceBroker  # noqa: PLC0415
    from application.ports import WorkerLease  # noqa: PLC0415

    store = FileDelegationStore(fs, FastenersLockFactory(), resolve_squad_root(environ))
    lease = WorkerLease(
        role.session, role.batch_id, role.job_id, role.attempt_id, role.token, role.packet_digest
    )
    return WorkerRole(EvidenceBroker(store, lease, SystemClock()))


def child_events(
    role: ProcessRole, fs: FileSystem, environ: Mapping[str, str] | None = None
) -> PiEvents:
    """A child's ``PiEvents`` over the system's adapters. Only a spec child imports the
    reader, ledger and locks: a legacy child's bridge answers ``hello`` and is closed."""
    if isinstance(role, DelegationWorkerChild):
        return worker_events(role, fs, environ if environ is not None else {})
    if not isinstance(role, SpecChild):
        return closed_role_for(role)
    from adapters.store.lock import FastenersLockFactory  # noqa: PLC0415
    from adapters.system.clock import RandomIds, SystemClock  # noqa: PLC0415
    from application.child.role import child_role_for  # noqa: PLC0415

    return child_role_for(
        role, fs=fs, locks=FastenersLockFactory(), clock=SystemClock(), ids=RandomIds()
    )


def system_bridge_role(requested: RequestedRole, environ: Mapping[str, str]) -> BridgeRole:
    """The role of ``pi-squad bridge --role <requested>`` in ``environ``."""
    fs = native_file_system()
    return bridge_role_for(
        requested,
        process_role(environ, fs),
        main_role=functools.partial(main_bridge_role, environ),
        child_events=functools.partial(child_events, fs=fs, environ=environ),
    )
