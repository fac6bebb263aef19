"""The adapters every process role needs, a child's bridge included: file system, locks,
clock, ids and temporary directories.

Kept apart from ``adapters.py`` because every child Pi process starts a bridge: it imports only
these, not the store's codec or the agent catalogue (and their JSON Schema and cattrs imports).
"""

from __future__ import annotations

from typing import Any

from dependency_injector import containers, providers

from adapters.fs.platform import native_file_system
from adapters.store.lock import FastenersLockFactory
from adapters.system.clock import RandomIds, SystemClock
from adapters.system.temp import SystemTempDirs


class SystemAdapters(containers.DeclarativeContainer):
    """The operating system behind the ports (tests override these with the fakes)."""

    fs = providers.Singleton(native_file_system)
    clock = providers.Singleton(SystemClock)
    ids = providers.Singleton(RandomIds)
    temp_dirs = providers.Singleton(SystemTempDirs)
    locks = providers.Singleton(FastenersLockFactory)


SYSTEM_PORTS = ("fs", "locks", "clock", "ids")


def system_ports(
    adapters: providers.DependenciesContainer | providers.Container[Any], *names: str
) -> dict[str, providers.Provider[Any]]:
    """``names`` of ``adapters``' system ports (all of ``SYSTEM_PORTS`` when none is named), as
    keyword injections: the attestation auditor, the publisher and a child's role take all
    four, a flow runner and a delegation host the file system, clock and ids."""
    return {name: getattr(adapters, name) for name in names or SYSTEM_PORTS}
