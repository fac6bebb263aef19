"""Children still running when this process exits: stopped, reaped and cleaned up first.

A driver returns once its squad has stopped, often while a settled child is still in its exit
grace; the waiter threads that would remove that child's prompt file and private temporary
directory (a copy of ``auth.json``) are daemon threads and die with the interpreter. So every
child is tracked from its start until it is reaped, and at a normal exit (``atexit``) each one
left gets its stdin closed, the exit grace, then termination of its whole tree, and its waiter
finishes the cleanup before the interpreter goes. A process killed outright leaves its
directories behind; ``adapters.isolation.scratch`` sweeps those at the next start.
"""

from __future__ import annotations

import atexit
import threading
import time
import weakref
from typing import Protocol


class ExitingChild(Protocol):
    def alive(self) -> bool: ...

    def finish_at_exit(self, grace: float) -> None: ...


_children: weakref.WeakSet[ExitingChild] = weakref.WeakSet()
_lock = threading.Lock()


def track(child: ExitingChild) -> None:
    with _lock:
        _children.add(child)


def close_all(grace: float) -> None:
    """Every tracked child still alive: stdin closed (Pi exits on its own), then stopped once
    ``grace`` seconds have passed for all of them together, and its files removed."""
    with _lock:
        left = [child for child in _children if child.alive()]
    deadline = time.monotonic() + grace
    for child in left:
        child.finish_at_exit(max(deadline - time.monotonic(), 0.0))


EXIT_GRACE_SECONDS = 2.0
atexit.register(close_all, EXIT_GRACE_SECONDS)
