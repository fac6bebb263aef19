"""The main Pi's `delegate` host: real workers in the main bridge's process.

Offered only when the human made a grant: the user's ``$PI_SQUAD_ROOT/delegation/policy.json``
exists (without it no source root is granted, and the tool's top-level ``oneOf`` schema is not
put in front of providers that may refuse it). The grant is that file alone (no CLI flags),
the delegation session is ``default`` (the one ``pi-squad delegate ...`` reads without
``--session``), and the workers run as threads of this bridge: ``collect`` waits here while
they report. The Pi runtime is located on the first call, so a missing runtime fails that call
and never the squad tools. The main Pi's session-switching events and its ``session_shutdown``
are navigation (``MainDelegation.session_change``, ``domain.delegation.navigation``).
"""

from __future__ import annotations

import os
import threading

from adapters.delegation.workers import PiWorkerRuntime
from adapters.isolation.confinement import agent_directory
from application.delegation.host import DelegationHost
from application.delegation.navigation import SessionNavigation
from application.ports import SessionChange
from domain.delegation.policy import GrantFlags
from entrypoints.children import child_runtime
from entrypoints.container import CliContainer

MAIN_SESSION = "default"


class MainDelegation:
    """One host and one worker runtime for the life of the main bridge."""

    def __init__(self, container: CliContainer, cwd: str) -> None:
        self._container = container
        self._cwd = cwd
        self._lock = threading.Lock()
        self._host: DelegationHost | None = None
        self._runtime: PiWorkerRuntime | None = None
        self._navigation = SessionNavigation(self._current_host)

    def host(self) -> DelegationHost:
        with self._lock:
            if self._host is None:
                container = self._container
                runtime = PiWorkerRuntime(
                    child_runtime(container.environ(), agent_dir=None, provider=None),
                    squad_root=container.squad_root(),
                    agent_dir=agent_directory(container.environ()),
                )
                host: DelegationHost = container.delegation.host(
                    session=MAIN_SESSION,
                    grants=container.delegation.grants(cwd=self._cwd, flags=GrantFlags()),
                    cwd=self._cwd,
                    worker_context=False,
                    runtime=runtime,
                    dispatching=True,
                )
                runtime.bind(host)
                self._host, self._runtime = host, runtime
            return self._host

    def _current_host(self) -> DelegationHost | None:
        with self._lock:
            return self._host  # None: this bridge never delegated, nothing of it is running

    def session_change(self, change: SessionChange) -> None:
        """A forwarded session event (``/new``, ``/resume``, ``/fork``, ``/clone``, ``/tree``,
        or ``session_shutdown`` with its reason): navigation when the domain says so; a new
        task generation, this session's active attempts cancelled (leases revoked first,
        workers killed after), ready results stale (seed §6, §7)."""
        self._navigation.session_change(change)

    def shutdown(self) -> None:
        """After ``session_shutdown``'s navigation: any worker still running is killed before
        the bridge goes (their leases stay the host's to settle)."""
        with self._lock:
            runtime = self._runtime
        if runtime is not None:
            runtime.stop_all()


def main_delegation(container: CliContainer, cwd: str) -> MainDelegation | None:
    policy = os.path.join(container.squad_root(), "delegation", "policy.json")
    return MainDelegation(container, cwd) if os.path.isfile(policy) else None
