"""``Poller``: a daemon thread that calls one function every ``interval`` seconds between
``start`` and ``stop``; what a main Pi's live rows redraw on (the squads' ``LiveView``, the
delegation row), since what they show changes in other threads and processes."""

from __future__ import annotations

import threading
from collections.abc import Callable

import attrs


@attrs.define
class Poller:
    _tick: Callable[[], None]
    # Seconds between calls; 0 or less: no thread (a test calls the function itself).
    _interval: float
    _name: str
    # Each start's own stop signal: a thread told to stop never runs on after a restart.
    _stop: threading.Event = attrs.field(factory=threading.Event, init=False)
    _thread: threading.Thread | None = attrs.field(default=None, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)

    def start(self) -> None:
        """Start calling (again, after ``stop``); a poller already running is left as it is."""
        with self._lock:
            if self._interval <= 0 or self._thread is not None:
                return
            stop = self._stop = threading.Event()
            self._thread = threading.Thread(
                target=self._run, args=(stop,), name=self._name, daemon=True
            )
            self._thread.start()

    def stop(self) -> None:
        """No call starts after this returns (one running in another thread is waited for,
        at most 5 s; from inside a call, that call is the last)."""
        with self._lock:
            thread, self._thread = self._thread, None
            self._stop.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def _run(self, stop: threading.Event) -> None:
        while not stop.wait(self._interval):
            self._tick()
