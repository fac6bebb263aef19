"""Composition roots: the only place adapters are chosen. One container per process role."""

from __future__ import annotations

import os
from collections.abc import Mapping

from dependency_injector import containers, providers

from adapters.agent_files import FileAgentDirectory, load_agent_catalog
from adapters.bridge import bridge_role_for, inert_main_bridge_role
from adapters.clock_system import RandomIds, SystemClock
from adapters.fs_select import native_file_system
from adapters.lock_fasteners import FastenersLockFactory
from adapters.store_files import FileStore
from adapters.store_json import JsonSquadCodec
from application.attestation_check import AttestationAuditor
from application.child.environment import ProcessRole, classify_environment
from application.child.role import child_role_for
from application.create_squad import Publisher
from application.mailbox import Mailbox
from application.operations import SquadOperations
from application.ports import FileSystem
from application.report import ReportBuilder
from application.review import ReviewRecorder
from application.squad_root import squad_root
from application.status import SquadStatusReader


def _squad_root(environ: Mapping[str, str]) -> str:
    return os.path.abspath(squad_root(environ, os.path.expanduser("~")))


class CliContainer(containers.DeclarativeContainer):
    """The ``pi-squad`` command line: one-shot operations over the squad root."""

    environ = providers.Object(os.environ)
    fs = providers.Singleton(native_file_system)
    clock = providers.Singleton(SystemClock)
    ids = providers.Singleton(RandomIds)
    locks = providers.Singleton(FastenersLockFactory)
    codec = providers.Singleton(JsonSquadCodec)
    squad_root = providers.Callable(_squad_root, environ)
    agent_catalog = providers.Factory(load_agent_catalog, squad_root=squad_root)
    store = providers.Singleton(FileStore, fs=fs, locks=locks, root=squad_root)
    auditor = providers.Factory(AttestationAuditor, fs=fs, locks=locks, clock=clock, store=store)
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


def _process_role(environ: Mapping[str, str], fs: FileSystem) -> ProcessRole:
    return classify_environment(environ, fs.flavour)


class BridgeContainer(containers.DeclarativeContainer):
    """``pi-squad bridge --role main|child``: the Python side of one Pi process's extension.

    ``requested_role`` is the shim's ``--role``; the environment decides the rest (contract §6).
    ``main_role`` builds the ``BridgeRole`` for the main process: override it with the squad
    runtime's handler (``adapters.bridge.main_bridge_role``); the default registers nothing.
    """

    environ = providers.Object(os.environ)
    requested_role = providers.Object("child")
    fs = providers.Singleton(native_file_system)
    clock = providers.Singleton(SystemClock)
    locks = providers.Singleton(FastenersLockFactory)
    process_role = providers.Callable(_process_role, environ, fs)
    child_events = providers.Factory(child_role_for, fs=fs, locks=locks, clock=clock)
    main_role = providers.Factory(inert_main_bridge_role)
    bridge_role = providers.Callable(
        bridge_role_for,
        requested_role,
        process_role,
        main_role=main_role.provider,
        child_events=child_events.provider,
    )
