"""``PiWorkerRuntime``: the `delegate` host's workers as ``pi --mode rpc`` children
(docs/delegation.md, "Workers on real Pi"): ``application.delegation.worker_runtime`` over the
real clock, with what is Pi's and the system's here.

Each worker's private directory is named after this process, so a driver killed mid-job leaves
nothing the next worker's start does not sweep; in it, the worker's own Pi agent directory (a
copy of the user's credentials and models, Pi's retries off). Only a start that failed before
its first prompt was written may be started again, and the worker's process id is recorded so
that a later host recognises it. The session's evidence broker runs here, in the host, served
to the workers on a socket they cannot write (``broker_server.py``).
"""

from __future__ import annotations

import contextlib
import functools
import shutil
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence

from adapters.delegation.worker_setup import worker_agent_variables, write_worker_settings
from adapters.isolation.confinement import AGENT_DIR_ENV
from adapters.isolation.scratch import make_scratch
from adapters.pi_rpc import SpawnFailed
from adapters.system.clock import SystemClock
from application.delegation.broker_service import HostedBroker
from application.delegation.worker_runtime import ChildWorkerRuntime, sweep_revoked
from application.ports import (
    BrokerEndpoint,
    BrokerHosting,
    ChildHandle,
    ChildRuntime,
    Clock,
    Confinement,
    DelegationStore,
    IsolationSupport,
    TempDirs,
    WorkerLease,
    WorkerStart,
)
from domain.child_environment import broker_socket_environ

__all__ = ["SQUAD_ROOT", "PiWorkerRuntime", "WorkerScratch", "sweep_revoked"]

SQUAD_ROOT = "PI_SQUAD_ROOT"


class WorkerScratch:
    """Workers' private directories in the system's temporary directory, named after this
    process (``adapters.isolation.scratch``); removed, with everything in them, at the end."""

    @contextlib.contextmanager
    def temporary_dir(self, prefix: str) -> Iterator[str]:
        path = make_scratch(None, prefix=prefix)
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)


class PiWorkerSetup:
    """``isolation``: what the children's runtime enforces. Where it is Landlock, a worker is
    confined as a squad child is, and more narrowly: it writes its private directory (its Pi
    session and agent directory), its runtime scratch (``TMPDIR``) and ``/dev/null``; nothing
    in the squad root (its session's records included: the broker runs in the host, reached
    at ``broker_address()``), the user's project or home. Given ``readable`` (the read
    allowlist, ``adapters.isolation.readable.worker_readable``, computed at the first start),
    it also reads and executes only beneath that list and what it may write. Where the kernel
    has no Landlock (``PI_SQUAD_ISOLATION=none``, not Linux, Linux < 6.2) it runs unconfined,
    its tool list its only bound."""

    def __init__(
        self,
        *,
        squad_root: str,
        agent_dir: str,
        broker_address: Callable[[], str],
        isolation: IsolationSupport | None = None,
        readable: Callable[[], Sequence[str]] | None = None,
    ) -> None:
        self._squad_root = squad_root
        self._agent_dir = agent_dir
        self._broker_address = broker_address
        self._isolation = isolation
        self._readable = None if readable is None else functools.cache(readable)

    def prepare(self, directory: str) -> Mapping[str, str]:
        write_worker_settings(directory, self._agent_dir)
        return {
            SQUAD_ROOT: self._squad_root,
            **broker_socket_environ(self._broker_address()),
            **worker_agent_variables(directory),
        }

    def confinement(self, directory: str, lease: WorkerLease) -> Confinement | None:
        if self._isolation is None or self._isolation.mode != "landlock":
            return None
        return Confinement(
            squad_root=self._squad_root,
            # No directory of the squad root: the worker's own records are its private
            # directory, the one it may write.
            ledger_dir=directory,
            project_dir=directory,
            agent_dir=worker_agent_variables(directory)[AGENT_DIR_ENV],
            readable=None if self._readable is None else tuple(self._readable()),
        )

    def restartable(self, error: Exception) -> bool:
        return isinstance(error, SpawnFailed) and error.before_prompt

    def process_id(self, handle: ChildHandle) -> int | None:
        pid = getattr(handle, "pid", None)
        return pid if isinstance(pid, int) else None


class PiWorkerRuntime(ChildWorkerRuntime):
    """A ``WorkerRuntime`` over real Pi children (``agent_dir``: the user's Pi agent directory,
    which each worker's own copies; ``isolation``: what ``children`` enforces, ``None`` for
    none; ``readable``: the workers' read allowlist, ``None`` for reads unrestricted), serving
    its session's evidence broker over ``store`` through ``brokers`` from its first start
    until ``stop_all``. ``bind`` the host before the first start."""

    def __init__(
        self,
        children: ChildRuntime,
        *,
        squad_root: str,
        agent_dir: str,
        store: DelegationStore,
        brokers: BrokerHosting,
        isolation: IsolationSupport | None = None,
        readable: Callable[[], Sequence[str]] | None = None,
        clock: Clock | None = None,
        temp_dirs: TempDirs | None = None,
    ) -> None:
        clock = clock if clock is not None else SystemClock()
        super().__init__(
            children,
            clock=clock,
            temp_dirs=temp_dirs if temp_dirs is not None else WorkerScratch(),
            setup=PiWorkerSetup(
                squad_root=squad_root,
                agent_dir=agent_dir,
                broker_address=self._broker_address,
                isolation=isolation,
                readable=readable,
            ),
        )
        self._store = store
        self._clock = clock
        self._brokers = brokers
        self._broker_lock = threading.Lock()
        self._endpoint: BrokerEndpoint | None = None
        self._broker: HostedBroker | None = None

    def _broker_address(self) -> str:
        with self._broker_lock:
            if self._endpoint is None:
                raise RuntimeError("the evidence broker is not served")
            return self._endpoint.address

    def start(self, start: WorkerStart) -> None:
        """The session's broker served first (one host, one session): a lease of another
        session is refused before any worker starts."""
        session = start.lease.session
        with self._broker_lock:
            if self._broker is not None and self._broker.session != session:
                raise RuntimeError(
                    f"this host serves session {self._broker.session}, not {session}"
                )
            if self._endpoint is None:
                self._broker = HostedBroker(self._store, self._clock, session)
                self._endpoint = self._brokers.open(self._broker)
        super().start(start)

    def stop_all(self) -> None:
        """Shutdown: every worker killed, then the broker closed."""
        try:
            super().stop_all()
        finally:
            with self._broker_lock:
                endpoint, self._endpoint = self._endpoint, None
            if endpoint is not None:
                endpoint.close()


_scratch_conforms: type[TempDirs] = WorkerScratch
