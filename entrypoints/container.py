"""The composition root of the ``pi-squad`` command line: the only place adapters are chosen
for it. ``run`` and ``demo`` drive a squad from this process, so the driver is part of it.

The concerns it is built from live in ``entrypoints/concerns/`` (``Settings``, ``Adapters`` and
``UseCases`` are importable from here too); the bridge's roots are ``bridge_container.py``
(a child's) and ``main_bridge_container.py`` (the main Pi's). Every process role is built by
the factory ``entrypoints/roles.py`` names for it; the containers wrap those factories.
"""

from __future__ import annotations

from dependency_injector import containers, providers

from entrypoints.concerns.adapters import Adapters
from entrypoints.concerns.delegation import Delegation
from entrypoints.concerns.driver import Driver
from entrypoints.concerns.settings import Settings
from entrypoints.concerns.use_cases import UseCases

__all__ = ["Adapters", "CliContainer", "Driver", "Settings", "UseCases"]


class CliContainer(containers.DeclarativeContainer):
    """Settings, adapters, use cases and the driver, each its own container; the names below
    are the ones callers use (tests and bench/ override them with their fakes)."""

    settings = providers.Container(Settings)
    adapters = providers.Container(Adapters, settings=settings)
    use_cases = providers.Container(UseCases, settings=settings, adapters=adapters)
    driver = providers.Container(
        Driver,
        settings=settings,
        adapters=adapters,
        use_cases=use_cases,
        child_provider=settings.default_provider,
    )
    delegation = providers.Container(Delegation, settings=settings, adapters=adapters)

    environ = settings.environ
    squad_root = settings.squad_root
    fs = adapters.fs
    clock = adapters.clock
    ids = adapters.ids
    temp_dirs = adapters.temp_dirs
    locks = adapters.locks
    codec = adapters.codec
    store = adapters.store
    agent_directory = adapters.agent_directory
    agent_catalog = adapters.agent_catalog
    auditor = use_cases.auditor
    publisher = use_cases.publisher
    operations = use_cases.operations
    review_recorder = use_cases.review_recorder
    status_reader = use_cases.status_reader
    flow_journal = use_cases.flow_journal
    mailbox = use_cases.mailbox
    report_builder = use_cases.report_builder
    scheduler = use_cases.scheduler
    flow_runner = driver.flow_runner
