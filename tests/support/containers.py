"""A test's or a benchmark's adapters in place of the real ones in a composition root.

Tests and bench/ obtain their use cases and roles from the production containers
(``entrypoints/``), never by wiring them by hand; this overrides what differs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from dependency_injector import providers

from application.ports import Clock, FileSystem, Ids, LockFactory
from entrypoints.bridge_container import BridgeContainer
from entrypoints.container import CliContainer


class SystemPorts(Protocol):
    """What stands in for the system adapters (a test world, the bench's real adapters)."""

    @property
    def fs(self) -> FileSystem: ...
    @property
    def locks(self) -> LockFactory: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def ids(self) -> Ids: ...


def override_system(
    container: CliContainer | BridgeContainer, environ: Mapping[str, str], system: SystemPorts
) -> None:
    """``container`` reads ``environ`` and uses ``system``'s file system, locks, clock and ids."""
    container.environ.override(providers.Object(environ))
    container.fs.override(providers.Object(system.fs))
    container.locks.override(providers.Object(system.locks))
    container.clock.override(providers.Object(system.clock))
    container.ids.override(providers.Object(system.ids))
