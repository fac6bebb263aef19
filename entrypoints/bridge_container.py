"""``pi-squad bridge``'s roles as a container, for tests and bench/ to override its adapters.

The bridge process itself does not import this (nor ``dependency_injector``): it calls the same
factories of ``entrypoints.roles`` from ``entrypoints.bridge_root``, so a container whose
adapters are overridden builds its role exactly as the process does, a delegated worker's
broker client included.
"""

from __future__ import annotations

from dependency_injector import containers, providers

from adapters.bridge import bridge_role_for
from adapters.delegation.broker_client import connect_broker
from entrypoints.bridge_root import deferred_main_role
from entrypoints.concerns.settings import Settings
from entrypoints.concerns.system import SystemAdapters
from entrypoints.roles import ChildPorts, child_events, process_role


class BridgeContainer(containers.DeclarativeContainer):
    """``pi-squad bridge --role main|child``: the Python side of one Pi process's extension.

    ``requested_role`` is the shim's ``--role``; the environment decides the rest (contract §6).
    ``child_events(process_role())`` is a child's role. ``main_role`` builds the ``BridgeRole``
    for the main process (``main_bridge_container.py``'s); override it to serve another.
    """

    settings = providers.Container(Settings)
    adapters = providers.Container(SystemAdapters)

    environ = settings.environ
    fs = adapters.fs
    clock = adapters.clock
    ids = adapters.ids
    locks = adapters.locks
    # A delegated worker's client of the evidence broker its host serves.
    worker_broker = providers.Factory(connect_broker)
    requested_role = providers.Object("child")
    process_role = providers.Callable(process_role, environ, fs)
    # A child's ports, in ``ChildPorts``' order; each is made when the role first needs it.
    child_ports = providers.Factory(
        ChildPorts, *(port.provider for port in (fs, locks, clock, ids, worker_broker))
    )
    child_events = providers.Factory(child_events, ports=child_ports)
    main_role = providers.Factory(deferred_main_role, environ)
    bridge_role = providers.Callable(
        bridge_role_for,
        requested_role,
        process_role,
        main_role=main_role.provider,
        child_events=child_events.provider,
    )
