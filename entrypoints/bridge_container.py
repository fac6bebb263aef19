"""``pi-squad bridge``'s roles as a container, for tests and bench/ to override its adapters.

The bridge process itself does not import this (nor ``dependency_injector``): it runs the
hand-wired ``entrypoints.bridge_root``, whose ``process_role`` and ``main_bridge_role`` are the
providers here, so an overridden container builds its role exactly as the process does.
"""

from __future__ import annotations

from dependency_injector import containers, providers

from adapters.bridge import bridge_role_for
from application.child.role import child_role_for
from entrypoints.bridge_root import main_bridge_role, process_role
from entrypoints.concerns.settings import Settings
from entrypoints.concerns.system import SystemAdapters, system_ports


class BridgeContainer(containers.DeclarativeContainer):
    """``pi-squad bridge --role main|child``: the Python side of one Pi process's extension.

    ``requested_role`` is the shim's ``--role``; the environment decides the rest (contract §6).
    ``child_events(process_role())`` is a child's role. ``main_role`` builds the ``BridgeRole``
    for the main process: override it with the squad runtime's handler
    (``adapters.bridge.main_bridge_role``); the default registers nothing.
    """

    settings = providers.Container(Settings)
    adapters = providers.Container(SystemAdapters)

    environ = settings.environ
    fs = adapters.fs
    clock = adapters.clock
    ids = adapters.ids
    locks = adapters.locks
    requested_role = providers.Object("child")
    process_role = providers.Callable(process_role, environ, fs)
    child_events = providers.Factory(child_role_for, **system_ports(adapters))
    main_role = providers.Factory(main_bridge_role, environ)
    bridge_role = providers.Callable(
        bridge_role_for,
        requested_role,
        process_role,
        main_role=main_role.provider,
        child_events=child_events.provider,
    )
