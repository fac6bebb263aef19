"""The `delegate` host's adapters and the host itself (docs/delegation.md). The call-time
values (session, working directory, grant flags, whether this process is a worker) are given
by the caller; tests override ``runtime``, ``wakeup``, ``worker_runtime`` or any system
adapter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from dependency_injector import containers, providers

from adapters.delegation.policy import FilePolicy
from adapters.delegation.runtime import NoWorkers, ThreadWakeup
from adapters.delegation.store import FileDelegationStore
from adapters.isolation.confinement import agent_directory
from adapters.system.processes import ProcProcesses
from application.delegation.host import DelegationHost
from application.delegation.transactions import SessionPorts
from entrypoints.children import child_runtime
from entrypoints.concerns.system import system_ports
from entrypoints.roles import dispatching_host

if TYPE_CHECKING:
    from adapters.delegation.workers import PiWorkerRuntime
    from adapters.isolation.landlock import IsolationSetting
    from application.ports import DelegationStore


def pi_workers(
    environ: Mapping[str, str],
    squad_root: str,
    isolation: IsolationSetting,
    runtime_override: str | None,
    store: DelegationStore,
) -> PiWorkerRuntime:
    """Workers on real Pi, started from ``environ`` (the user's agent directory is copied for
    each), their evidence broker served by this process over ``store``; the Pi runtime is
    located now, so a missing one fails the call that needs workers."""
    from adapters.delegation.broker_server import UnixBrokerHosting  # noqa: PLC0415
    from adapters.delegation.workers import PiWorkerRuntime  # noqa: PLC0415 - only with workers
    from adapters.isolation.readable import worker_readable  # noqa: PLC0415

    children = child_runtime(
        environ,
        agent_dir=None,
        provider=None,
        isolation=isolation,
        runtime_override=runtime_override,
    )
    return PiWorkerRuntime(
        children,
        squad_root=squad_root,
        agent_dir=agent_directory(environ),
        store=store,
        brokers=UnixBrokerHosting(squad_root),
        isolation=children.isolation,
        readable=lambda: worker_readable(children.protected_code),
    )


class Delegation(containers.DeclarativeContainer):
    settings = providers.DependenciesContainer()
    adapters = providers.DependenciesContainer()

    store = providers.Singleton(
        FileDelegationStore, fs=adapters.fs, locks=adapters.locks, root=settings.squad_root
    )
    runtime = providers.Singleton(NoWorkers)
    wakeup = providers.Singleton(ThreadWakeup)
    # Recognises a lost host's workers (domain/delegation/recovery.py).
    processes = providers.Singleton(ProcProcesses)
    # ``dispatching``: only a process with real workers starts them (part 2).
    dispatching = providers.Object(False)
    # Called with ``cwd`` and ``flags``.
    grants = providers.Factory(FilePolicy, fs=adapters.fs, root=settings.squad_root)
    # Called with ``grants`` (and ``runtime``, in a process with workers).
    ports = providers.Factory(
        SessionPorts,
        store=store,
        runtime=runtime,
        **system_ports(adapters, "fs", "clock"),
        wakeup=wakeup,
        processes=processes,
    )
    # Called with ``session``, ``ports``, ``cwd`` and ``worker_context``.
    host = providers.Factory(DelegationHost, ids=adapters.ids, dispatching=dispatching)
    worker_runtime = providers.Factory(
        pi_workers,
        settings.environ,
        settings.squad_root,
        settings.isolation,
        settings.runtime_dir,
        store,
    )
    # Called with ``session``, ``grants`` and ``cwd``: a host whose jobs start on workers of
    # this process (``delegate work``, the main bridge with a grant).
    workers = providers.Factory(dispatching_host, host.provider, ports.provider, worker_runtime)
