"""What the process of ``pi-squad bridge`` runs: the role factories of ``entrypoints.roles``
over the operating system's adapters, called without a container.

Every child Pi process starts a bridge and waits for its ``hello`` before the session starts,
so a child's bridge start-up is paid per task. ``dependency_injector`` (and the ``asyncio`` it
imports) cost ~90 ms of it from source, ~50 ms from cached bytecode (``python -X importtime``,
``bench.child_start``): this root gives the factories the same adapters
``entrypoints.concerns.system.SystemAdapters`` provides (each made at its first use, once) and
imports none of them until the role needs it. ``BridgeContainer``, which tests and bench/
override, wraps the same factories. The main role comes from its container
(``main_bridge_container.py``), imported only when ``--role main`` is served in the user's Pi.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING

from adapters.bridge.roles import BridgeRole, RequestedRole, bridge_role_for
from adapters.fs.platform import native_file_system
from entrypoints.roles import ChildPorts, child_events, process_role

if TYPE_CHECKING:
    from application.ports import Clock, FileSystem, Ids, LockFactory, WorkerBroker
    from domain.child_environment import DelegationWorkerChild


def deferred_main_role(environ: Mapping[str, str]) -> BridgeRole:
    # Deferred: the main role pulls in the whole squad runtime and its container, which no
    # child needs.
    from entrypoints.main_bridge_container import build_main_bridge_role  # noqa: PLC0415

    return build_main_bridge_role(environ)


def system_child_ports(fs: FileSystem) -> ChildPorts:
    """The system's adapters for a child's role, each imported and made once, when first used."""

    @functools.cache
    def locks() -> LockFactory:
        from adapters.store.lock import FastenersLockFactory  # noqa: PLC0415

        return FastenersLockFactory()

    @functools.cache
    def clock() -> Clock:
        from adapters.system.clock import SystemClock  # noqa: PLC0415

        return SystemClock()

    @functools.cache
    def ids() -> Ids:
        from adapters.system.clock import RandomIds  # noqa: PLC0415

        return RandomIds()

    def worker_broker(worker: DelegationWorkerChild) -> WorkerBroker:
        from adapters.delegation.broker_client import connect_broker  # noqa: PLC0415

        return connect_broker(worker)

    return ChildPorts(fs=lambda: fs, locks=locks, clock=clock, ids=ids, worker_broker=worker_broker)


def system_bridge_role(requested: RequestedRole, environ: Mapping[str, str]) -> BridgeRole:
    """The role of ``pi-squad bridge --role <requested>`` in ``environ``."""
    fs = native_file_system()
    return bridge_role_for(
        requested,
        process_role(environ, fs),
        main_role=functools.partial(deferred_main_role, environ),
        child_events=functools.partial(child_events, ports=system_child_ports(fs)),
    )
