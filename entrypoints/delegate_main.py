"""The main Pi's `delegate` host: real workers in the main bridge's process.

Offered only when the human made a grant: the user's ``$PI_SQUAD_ROOT/delegation/policy.json``
exists (without it no source root is granted, and the tool's top-level ``oneOf`` schema is not
put in front of providers that may refuse it). The grant is that file alone (no CLI flags),
the delegation session is ``default`` (the one ``pi-squad delegate ...`` reads without
``--session``), and the workers run as threads of this bridge: ``collect`` waits here while
they report. The Pi runtime is located on the first call, so a missing runtime fails that call
and never the squad tools. Its ``session_shutdown`` is navigation (``MainDelegation.shutdown``).
"""

from __future__ import annotations

import os
import threading

from adapters.delegation_workers import PiWorkerRuntime
from application.delegation.host import DelegationHost
from domain.delegation.policy import GrantFlags
from entrypoints.children import child_runtime
from entrypoints.container import CliContainer

MAIN_SESSION = "default"
SHUTDOWN_REASON = "the main Pi session ended or switched (session_shutdown)"


class MainDelegation:
    """One host and one worker runtime for the life of the main bridge."""

    def __init__(self, container: CliContainer, cwd: str) -> None:
        self._container = container
        self._cwd = cwd
        self._lock = threading.Lock()
        self._host: DelegationHost | None = None
        self._runtime: PiWorkerRuntime | None = None

    def host(self) -> DelegationHost:
        with self._lock:
            if self._host is None:
                container = self._container
                runtime = PiWorkerRuntime(
                    child_runtime(container.environ(), agent_dir=None, provider=None),
                    squad_root=container.squad_root(),
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

    def shutdown(self) -> None:
        """The main Pi's ``session_shutdown``: navigation, conservatively. The shim does not
        say why (quit, ``/new``, ``/resume``, ``/fork`` and ``/reload`` all arrive the same),
        and after any of them the parent context the task generation bound is gone: a new
        task generation, this session's active attempts cancelled (their workers killed
        before the bridge goes), ready results stale (seed §6, §7)."""
        with self._lock:
            host, runtime = self._host, self._runtime
        if host is None or runtime is None:
            return  # this bridge never delegated: nothing of it is running
        try:
            host.navigate(SHUTDOWN_REASON)
        finally:
            runtime.stop_all()


def main_delegation(container: CliContainer, cwd: str) -> MainDelegation | None:
    policy = os.path.join(container.squad_root(), "delegation", "policy.json")
    return MainDelegation(container, cwd) if os.path.isfile(policy) else None
