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
from collections.abc import Callable

from application.delegation.host import DelegationHost
from application.delegation.navigation import SessionNavigation
from application.ports import GrantSource, SessionChange
from domain.delegation.policy import GrantFlags
from entrypoints.roles import DispatchingHost

MAIN_SESSION = "default"


class MainDelegation:
    """One host and one worker runtime for the life of the main bridge, made at the first
    call of the `delegate` tool by ``make_workers``."""

    def __init__(self, make_workers: Callable[[], DispatchingHost]) -> None:
        self._make_workers = make_workers
        self._lock = threading.Lock()
        self._workers: DispatchingHost | None = None
        self._navigation = SessionNavigation(self._current_host)

    def host(self) -> DelegationHost:
        with self._lock:
            if self._workers is None:
                self._workers = self._make_workers()
            return self._workers.host

    def _current_host(self) -> DelegationHost | None:
        with self._lock:
            # None: this bridge never delegated, nothing of it is running.
            return self._workers.host if self._workers is not None else None

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
            workers = self._workers
        if workers is not None:
            workers.runtime.stop_all()


def main_delegation(
    squad_root: str,
    cwd: str,
    *,
    grants: Callable[..., GrantSource],
    workers: Callable[..., DispatchingHost],
) -> MainDelegation | None:
    """The main bridge's delegation when the user granted one (``grants`` and ``workers`` are
    the ``Delegation`` container's), else ``None``."""
    if not os.path.isfile(os.path.join(squad_root, "delegation", "policy.json")):
        return None
    return MainDelegation(
        lambda: workers(session=MAIN_SESSION, grants=grants(cwd=cwd, flags=GrantFlags()), cwd=cwd)
    )
