"""Composition roots: the only place adapters are chosen. One container per process role."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Mapping

from dependency_injector import containers, providers

from adapters.agent_files import FileAgentDirectory, load_agent_catalog
from adapters.bridge import BridgeRole, main_bridge_role
from adapters.clock_system import RandomIds, SystemClock
from adapters.fs_select import native_file_system
from adapters.lock_fasteners import FastenersLockFactory
from adapters.pi_rpc import PiRpcRuntime
from adapters.squad_root import resolve_squad_root
from adapters.store_files import FileStore
from adapters.store_json import JsonSquadCodec
from adapters.temp_system import SystemTempDirs
from application.attestation_check import AttestationAuditor
from application.create_squad import Publisher
from application.drive import drive_squad
from application.mailbox import Mailbox
from application.main_role import MainRole
from application.operations import SquadOperations
from application.ports import ChildRuntime
from application.report import ReportBuilder
from application.review import ReviewRecorder
from application.scheduler import NO_ISOLATION, Notice, Scheduler
from application.status import SquadStatusReader
from domain.errors import PiSquadError
from entrypoints.children import child_runtime, isolation_required


class CliContainer(containers.DeclarativeContainer):
    """The ``pi-squad`` command line: one-shot operations over the squad root."""

    environ = providers.Object(os.environ)
    fs = providers.Singleton(native_file_system)
    clock = providers.Singleton(SystemClock)
    ids = providers.Singleton(RandomIds)
    temp_dirs = providers.Singleton(SystemTempDirs)
    locks = providers.Singleton(FastenersLockFactory)
    codec = providers.Singleton(JsonSquadCodec)
    squad_root = providers.Callable(resolve_squad_root, environ)
    agent_catalog = providers.Factory(load_agent_catalog, squad_root=squad_root)
    store = providers.Singleton(FileStore, fs=fs, locks=locks, root=squad_root)
    auditor = providers.Factory(
        AttestationAuditor, fs=fs, locks=locks, clock=clock, ids=ids, store=store
    )
    publisher = providers.Factory(
        Publisher, fs=fs, locks=locks, clock=clock, ids=ids, codec=codec, squad_root=squad_root
    )
    agent_directory = providers.Singleton(FileAgentDirectory, squad_root)
    operations = providers.Factory(
        SquadOperations, store=store, auditor=auditor, agents=agent_directory, clock=clock, ids=ids
    )
    review_recorder = providers.Factory(
        ReviewRecorder, store=store, auditor=auditor, clock=clock, ids=ids
    )
    status_reader = providers.Factory(SquadStatusReader, store=store, auditor=auditor, clock=clock)
    mailbox = providers.Factory(Mailbox, store=store, clock=clock, ids=ids)
    report_builder = providers.Factory(ReportBuilder, store=store, auditor=auditor, clock=clock)


def build_main_bridge_role(environ: Mapping[str, str]) -> BridgeRole:
    """The main Pi's role: the squad tools over the same services the CLI uses.

    Children inherit this process's environment (and so the main Pi's agent directory);
    ``PI_SQUAD_PROVIDER`` and ``PI_SQUAD_MODEL`` set their model where an agent sets none.
    """
    cli = CliContainer()
    provider = environ.get("PI_SQUAD_PROVIDER") or None
    model = environ.get("PI_SQUAD_MODEL") or None

    def runtime() -> ChildRuntime:
        return child_runtime(environ, agent_dir=None, provider=provider)

    def make_scheduler(
        squad_id: str, children: ChildRuntime, notices: Callable[[Notice], None]
    ) -> Scheduler:
        isolation = children.isolation if isinstance(children, PiRpcRuntime) else NO_ISOLATION
        return Scheduler(
            isolation=isolation,
            require_isolation=isolation_required(environ),
            squad_id=squad_id,
            store=cli.store(),
            auditor=cli.auditor(),
            runtime=children,
            agents=cli.agent_directory(),
            clock=cli.clock(),
            ids=cli.ids(),
            notices=notices,
            default_model=model,
        )

    def drive(scheduler: Scheduler, stop: threading.Event) -> None:
        try:
            drive_squad(
                scheduler,
                store=cli.store(),
                locks=cli.locks(),
                fs_flavour=cli.fs().flavour,
                should_stop=stop.is_set,
            )
        except PiSquadError as error:
            sys.stderr.write(f"pi-squad: driver of {scheduler.squad_id}: {error}\n")

    handler = MainRole(
        cwd=os.getcwd(),
        store=cli.store(),
        publisher=cli.publisher,
        agents=cli.agent_directory(),
        operations=cli.operations(),
        reviews=cli.review_recorder(),
        mailbox=cli.mailbox(),
        status=cli.status_reader(),
        make_scheduler=make_scheduler,
        runtime=runtime,
        drive=drive,
        temp_dirs=cli.temp_dirs(),
    )
    return main_bridge_role(handler)
