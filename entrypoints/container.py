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


def _variable(environ: Mapping[str, str], name: str) -> str | None:
    return environ.get(name) or None


class Settings(containers.DeclarativeContainer):
    """What this process was told: its environment and what follows from it."""

    environ = providers.Object(os.environ)
    squad_root = providers.Callable(resolve_squad_root, environ)
    default_provider = providers.Callable(_variable, environ, "PI_SQUAD_PROVIDER")
    default_model = providers.Callable(_variable, environ, "PI_SQUAD_MODEL")
    require_isolation = providers.Callable(isolation_required, environ)


class Adapters(containers.DeclarativeContainer):
    """The outside world behind the ports (tests override these with the fakes)."""

    settings = providers.DependenciesContainer()
    fs = providers.Singleton(native_file_system)
    clock = providers.Singleton(SystemClock)
    ids = providers.Singleton(RandomIds)
    temp_dirs = providers.Singleton(SystemTempDirs)
    locks = providers.Singleton(FastenersLockFactory)
    codec = providers.Singleton(JsonSquadCodec)
    store = providers.Singleton(FileStore, fs=fs, locks=locks, root=settings.squad_root)
    agent_directory = providers.Singleton(FileAgentDirectory, settings.squad_root)
    agent_catalog = providers.Factory(load_agent_catalog, squad_root=settings.squad_root)


class UseCases(containers.DeclarativeContainer):
    """The application's use cases over the adapters."""

    settings = providers.DependenciesContainer()
    adapters = providers.DependenciesContainer()
    auditor = providers.Factory(
        AttestationAuditor,
        fs=adapters.fs,
        locks=adapters.locks,
        clock=adapters.clock,
        ids=adapters.ids,
        store=adapters.store,
    )
    publisher = providers.Factory(
        Publisher,
        fs=adapters.fs,
        locks=adapters.locks,
        clock=adapters.clock,
        ids=adapters.ids,
        codec=adapters.codec,
        squad_root=settings.squad_root,
    )
    operations = providers.Factory(
        SquadOperations,
        store=adapters.store,
        auditor=auditor,
        agents=adapters.agent_directory,
        clock=adapters.clock,
        ids=adapters.ids,
    )
    review_recorder = providers.Factory(
        ReviewRecorder,
        store=adapters.store,
        auditor=auditor,
        clock=adapters.clock,
        ids=adapters.ids,
    )
    status_reader = providers.Factory(
        SquadStatusReader, store=adapters.store, auditor=auditor, clock=adapters.clock
    )
    mailbox = providers.Factory(
        Mailbox, store=adapters.store, clock=adapters.clock, ids=adapters.ids
    )
    report_builder = providers.Factory(
        ReportBuilder, store=adapters.store, auditor=auditor, clock=adapters.clock
    )
    # One squad's scheduler; the caller gives ``squad_id``, ``runtime``, ``notices`` and
    # ``isolation`` (what that runtime enforces).
    scheduler = providers.Factory(
        Scheduler,
        store=adapters.store,
        auditor=auditor,
        agents=adapters.agent_directory,
        clock=adapters.clock,
        ids=adapters.ids,
        default_provider=settings.default_provider,
        default_model=settings.default_model,
        require_isolation=settings.require_isolation,
    )


class CliContainer(containers.DeclarativeContainer):
    """The ``pi-squad`` process (command line, main bridge, driver): settings, adapters and
    use cases, each its own container; the names below are the ones callers use."""

    settings = providers.Container(Settings)
    adapters = providers.Container(Adapters, settings=settings)
    use_cases = providers.Container(UseCases, settings=settings, adapters=adapters)

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
    mailbox = use_cases.mailbox
    report_builder = use_cases.report_builder
    scheduler = use_cases.scheduler


def build_main_bridge_role(environ: Mapping[str, str]) -> BridgeRole:
    """The main Pi's role: the squad tools over the same services the CLI uses.

    Children inherit this process's environment (and so the main Pi's agent directory);
    ``PI_SQUAD_PROVIDER`` and ``PI_SQUAD_MODEL`` set their model where an agent sets none.
    """
    cli = CliContainer()
    cli.environ.override(providers.Object(environ))
    provider = environ.get("PI_SQUAD_PROVIDER") or None

    def runtime() -> ChildRuntime:
        return child_runtime(environ, agent_dir=None, provider=provider)

    def make_scheduler(
        squad_id: str, children: ChildRuntime, notices: Callable[[Notice], None]
    ) -> Scheduler:
        isolation = children.isolation if isinstance(children, PiRpcRuntime) else NO_ISOLATION
        # The provider is the runtime's (``--provider``); the scheduler only fills the model.
        scheduler: Scheduler = cli.scheduler(
            squad_id=squad_id,
            runtime=children,
            notices=notices,
            isolation=isolation,
            default_provider=None,
        )
        return scheduler

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
