"""The `delegate` host's adapters and the host itself (docs/delegation.md). The call-time
values (session, working directory, grant flags, whether this process is a worker) are given
by the caller; tests override ``runtime``, ``wakeup`` or any system adapter."""

from __future__ import annotations

from dependency_injector import containers, providers

from adapters.delegation.policy import FilePolicy
from adapters.delegation.runtime import NoWorkers, ThreadWakeup
from adapters.delegation.store import FileDelegationStore
from adapters.system.processes import ProcProcesses
from application.delegation.host import DelegationHost


class Delegation(containers.DeclarativeContainer):
    settings = providers.DependenciesContainer()
    adapters = providers.DependenciesContainer()

    store = providers.Singleton(
        FileDelegationStore, fs=adapters.fs, locks=adapters.locks, root=settings.squad_root
    )
    runtime = providers.Singleton(NoWorkers)
    wakeup = providers.Singleton(ThreadWakeup)
    # Recognises a lost host's workers (application/delegation/recovery.py).
    processes = providers.Singleton(ProcProcesses)
    # ``dispatching``: only a process with real workers starts them (part 2).
    dispatching = providers.Object(False)
    # Called with ``cwd`` and ``flags``.
    grants = providers.Factory(FilePolicy, fs=adapters.fs, root=settings.squad_root)
    # Called with ``session``, ``grants``, ``cwd`` and ``worker_context``.
    host = providers.Factory(
        DelegationHost,
        store=store,
        runtime=runtime,
        fs=adapters.fs,
        clock=adapters.clock,
        ids=adapters.ids,
        wakeup=wakeup,
        dispatching=dispatching,
        processes=processes,
    )
