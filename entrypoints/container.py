"""Composition roots: the only place adapters are chosen. One container per process role."""

from __future__ import annotations

import os
from collections.abc import Mapping

from dependency_injector import containers, providers

from adapters.agent_files import load_agent_catalog
from adapters.clock_system import RandomIds, SystemClock
from adapters.fs_select import native_file_system
from adapters.lock_fasteners import FastenersLockFactory
from adapters.store_files import FileStore
from adapters.store_json import JsonSquadCodec
from application.attestation_check import AttestationAuditor
from application.create_squad import Publisher
from application.squad_root import squad_root


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
