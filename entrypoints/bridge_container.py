"""The composition root of ``pi-squad bridge``: only what a child's bridge needs is imported.

Every child Pi process starts a bridge, so its start-up time is paid per task; the main role
(and the command line's container behind it, ``main_bridge_container.py``) is imported only
when ``--role main`` asks for it.
"""

from __future__ import annotations

from collections.abc import Mapping

from dependency_injector import containers, providers

from adapters.bridge import BridgeRole, bridge_role_for
from application.child.role import child_role_for
from application.ports import FileSystem
from domain.child_environment import ChildEnvironment, ProcessRole
from entrypoints.concerns.settings import Settings
from entrypoints.concerns.system import SystemAdapters, system_ports


def _main_bridge_role(environ: Mapping[str, str]) -> BridgeRole:
    # Deferred: the main role pulls in the whole squad runtime, which no child needs.
    from entrypoints.main_bridge_container import build_main_bridge_role  # noqa: PLC0415

    return build_main_bridge_role(environ)


def _process_role(environ: Mapping[str, str], fs: FileSystem) -> ProcessRole:
    return ChildEnvironment.from_environ(environ, fs.flavour)


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
    process_role = providers.Callable(_process_role, environ, fs)
    child_events = providers.Factory(child_role_for, **system_ports(adapters))
    main_role = providers.Factory(_main_bridge_role, environ)
    bridge_role = providers.Callable(
        bridge_role_for,
        requested_role,
        process_role,
        main_role=main_role.provider,
        child_events=child_events.provider,
    )
