"""The squad drivers of one main Pi session: a thread per squad running the scheduler's loop.

Kept apart from the main role (``application/main_role.py``) because their life is their own:
starting one claims the squad for the session (``application/squads/squad_owner.py``), stopping one
wakes its loop (it sleeps until an event or a deadline otherwise) and waits for it, and a session
shutdown stops them all, suspending live tasks on their sessions.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import attrs

from application.ports import ChildRuntime, LockFactory, Store
from application.squads.scheduler import Notice, Scheduler
from application.squads.squad_owner import claim

# How long a stopping driver may take to suspend its live tasks before the session moves on.
STOP_JOIN_SECONDS = 30.0


@attrs.define
class _Driver:
    thread: threading.Thread
    stop: threading.Event
    scheduler: Scheduler


@attrs.define(kw_only=True, eq=False)
class SquadDrivers:
    _store: Store
    _make_scheduler: Callable[[str, ChildRuntime, Callable[[Notice], None]], Scheduler]
    _runtime: Callable[[], ChildRuntime]
    _drive: Callable[[Scheduler, threading.Event], None]
    _notify: Callable[[Notice], None]
    # Whether another process drives a squad now (it keeps the squad's owner); ``None``: not asked.
    _locks: LockFactory | None = None
    _drivers: dict[str, _Driver] = attrs.field(init=False, factory=dict)
    _guard: threading.Lock = attrs.field(init=False, factory=threading.Lock)

    def ensure(self, squad_id: str, session_file: str | None) -> None:
        """A driver runs ``squad_id`` from now on, owned by ``session_file``."""
        with self._guard:
            existing = self._drivers.get(squad_id)
            if existing is not None and existing.thread.is_alive():
                return
            claim(self._store, squad_id, session_file, self._locks)
            stop = threading.Event()
            scheduler = self._make_scheduler(squad_id, self._runtime(), self._notify)
            thread = threading.Thread(
                target=self._drive, args=(scheduler, stop), name=f"squad-{squad_id}", daemon=True
            )
            self._drivers[squad_id] = _Driver(thread=thread, stop=stop, scheduler=scheduler)
            thread.start()

    def stop(self, squad_id: str) -> None:
        with self._guard:
            driver = self._drivers.pop(squad_id, None)
        if driver is not None:
            _stop_all([driver])

    def stop_all(self, announce: Callable[[list[str]], None]) -> None:
        """Stops every driver; ``announce`` hears the squads still being driven (sorted) first,
        so the user is told before the wait for their live tasks to be suspended."""
        with self._guard:
            driving = sorted(s for s, d in self._drivers.items() if d.thread.is_alive())
            drivers = list(self._drivers.values())
            self._drivers.clear()
        announce(driving)
        _stop_all(drivers)

    def scheduler(self, squad_id: str) -> Scheduler | None:
        """The scheduler driving ``squad_id`` in this session, if any."""
        driver = self._drivers.get(squad_id)
        return driver.scheduler if driver is not None else None

    def driven(self) -> list[str]:
        return sorted(self._drivers)


def _stop_all(drivers: list[_Driver]) -> None:
    for driver in drivers:
        driver.stop.set()
        driver.scheduler.wake()  # its loop sleeps until an event or deadline otherwise
    for driver in drivers:
        driver.thread.join(timeout=STOP_JOIN_SECONDS)
