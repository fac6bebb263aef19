"""The concerns that reading squads needs, and nothing more: the environment and the squad root
under it, the system adapters and the squad store, the attestation auditor and the status
reader.

``Settings``, ``Adapters`` and ``UseCases`` extend these, so every root wires them the same
way; ``entrypoints/reading_container.py`` builds them alone, for the commands that only read
(``status``, ``verify``): a person or a script polling a squad does not pay for importing the
isolation adapters, the flow runner or the driver.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from dependency_injector import containers, providers

from adapters.store.files import FileStore
from application.attestation_check import AttestationAuditor
from application.squads.status import SquadStatusReader
from entrypoints.concerns import setting_reads as read
from entrypoints.concerns.system import SystemAdapters, system_ports

if TYPE_CHECKING:
    from application.flows.flow_journal import FlowJournal
    from application.ports import Clock, FileSystem, FlowRunRecords, Processes


# Imported when first provided: ``status`` and ``verify`` never load the flow records' modules.
def flow_run_records(fs: FileSystem, root: str) -> FlowRunRecords:
    from adapters.store.flow_runs import FileFlowRunRecords  # noqa: PLC0415

    return FileFlowRunRecords(fs, root)


def proc_processes() -> Processes:
    from adapters.system.processes import ProcProcesses  # noqa: PLC0415

    return ProcProcesses()


def flow_journal(records: FlowRunRecords, clock: Clock, processes: Processes) -> FlowJournal:
    from application.flows.flow_journal import FlowJournal  # noqa: PLC0415

    return FlowJournal(records, clock, processes)


class RootSettings(containers.DeclarativeContainer):
    """The environment (override ``environ`` to run against another) and the squad root."""

    environ = providers.Object(os.environ)
    # ``PI_SQUAD_ROOT``, else ``.pi/squad`` in the environment's ``HOME``.
    squad_root = providers.Callable(read.squad_root, environ)


class StoreAdapters(SystemAdapters):
    """The system adapters and the squad store under the settings' squad root."""

    settings = providers.DependenciesContainer()
    store = providers.Singleton(
        FileStore, fs=SystemAdapters.fs, locks=SystemAdapters.locks, root=settings.squad_root
    )
    # Every spawning flow's record under the squad root (``pi-squad flow status``/``list``).
    flow_runs = providers.Factory(flow_run_records, SystemAdapters.fs, settings.squad_root)
    processes = providers.Singleton(proc_processes)


def audited(
    adapters: providers.DependenciesContainer, auditor: providers.Provider[AttestationAuditor]
) -> dict[str, providers.Provider[Any]]:
    """The squad records, what checks their attestations, and the clock that dates a view."""
    return {"store": adapters.store, "auditor": auditor, "clock": adapters.clock}


class ReadingUseCases(containers.DeclarativeContainer):
    """What reads a squad: its attestations' auditor and its status; ``adapters`` is given."""

    adapters = providers.DependenciesContainer()
    auditor = providers.Factory(AttestationAuditor, store=adapters.store, **system_ports(adapters))
    status_reader = providers.Factory(
        SquadStatusReader, locks=adapters.locks, **audited(adapters, auditor)
    )
    flow_journal = providers.Factory(
        flow_journal, records=adapters.flow_runs, clock=adapters.clock, processes=adapters.processes
    )
