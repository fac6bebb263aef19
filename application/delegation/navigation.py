"""The main Pi's session events, as the delegation host hears them (docs/delegation.md,
"Navigation").

A forwarded event that is navigation (``domain.delegation.navigation``) makes the host
``navigate``: a new task generation; in one transaction every queued and running attempt is
cancelled with its lease revoked (so no broker call, model turn or report of it is accepted
from then on), and ready results go stale; only after that commit is each revoked worker
killed (SIGTERM, SIGKILL after the grace). A late report is dropped by the lease check.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from application.ports import SessionChange
from domain.delegation.navigation import navigation_reason


class Navigable(Protocol):
    def navigate(self, reason: str) -> int: ...


class SessionNavigation:
    """Turns session changes into ``navigate`` calls on the host this bridge runs, if any.

    ``host`` returns ``None`` while this bridge has not delegated: then nothing of it runs and
    the store is not touched (a main Pi without delegation work pays nothing)."""

    def __init__(self, host: Callable[[], Navigable | None]) -> None:
        self._host = host

    def session_change(self, change: SessionChange) -> int | None:
        """The new task generation, or ``None`` when nothing was navigated."""
        reason = navigation_reason(change.event, reason=change.reason, position=change.position)
        if reason is None:
            return None
        host = self._host()
        if host is None:
            return None
        return host.navigate(reason)
