"""Ctrl+C in a command that drives children: a stop request, never an exception mid-flight.

Python raises ``KeyboardInterrupt`` between any two bytecodes of the main thread, including
the instant after a lock's ``acquire`` returned and before the ``try`` that releases it. A
driver interrupted there leaks the squad's lock to itself, and its own clean-up (suspending
the live tasks) then waits on that lock until it times out. So the commands that drive turn
SIGINT into a flag their loop reads at a safe point, and wake the loop so that it looks at
once.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType


@contextmanager
def sigint_as_stop_request(wake: Callable[[], None]) -> Iterator[Callable[[], bool]]:
    """While open, Ctrl+C sets a flag (the yielded ``should_stop``) and calls ``wake``.

    ``wake`` runs on a thread of its own: a signal handler runs on the main thread between
    two bytecodes, possibly while that thread holds the very lock ``wake`` needs (a queue's
    mutex), and calling it there would deadlock. A second Ctrl+C while stopping only says
    that the stop is under way: stopping is what suspends the live tasks on their sessions,
    and cutting it short is what would lose them. Outside the main thread (where signals
    cannot be handled) the flag is never set and Ctrl+C behaves as before.
    """
    requested = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield requested.is_set
        return

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        if requested.is_set():
            sys.stderr.write("pi-squad: already stopping; suspending the live tasks\n")
            return
        requested.set()
        threading.Thread(target=wake, name="sigint-wake", daemon=True).start()

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield requested.is_set
    finally:
        signal.signal(signal.SIGINT, previous)
