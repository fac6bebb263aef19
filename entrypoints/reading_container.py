"""The composition root of the ``pi-squad`` commands that only read squads (``status``,
``verify``): the concerns of ``entrypoints/concerns/reading.py``, which ``CliContainer``'s own
extend, wired the same way and under the same names (tests override them with their fakes, or
pass a ``CliContainer`` instead).

Building only these keeps a polling ``pi-squad status`` from importing the isolation adapters,
the flow runner and the driver.
"""

from __future__ import annotations

from dependency_injector import containers, providers

from entrypoints.concerns.reading import ReadingUseCases, RootSettings, StoreAdapters


class ReadingContainer(containers.DeclarativeContainer):
    """The environment, the system adapters and the store, the auditor and the status reader."""

    settings = providers.Container(RootSettings)
    adapters = providers.Container(StoreAdapters, settings=settings)
    use_cases = providers.Container(ReadingUseCases, adapters=adapters)

    environ = settings.environ
    squad_root = settings.squad_root
    fs = adapters.fs
    clock = adapters.clock
    ids = adapters.ids
    locks = adapters.locks
    store = adapters.store
    auditor = use_cases.auditor
    status_reader = use_cases.status_reader
    flow_journal = use_cases.flow_journal
