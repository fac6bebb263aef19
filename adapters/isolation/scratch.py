"""Children's private temporary directories (a confined child's ``pi-squad-child-*``, a
delegated worker's ``pi-squad-worker-*``), and sweeping those a crashed driver left behind.

Each holds a child's ``TMPDIR`` and its private Pi agent directory with a copy of the user's
``auth.json``, so none may outlive its child. The child's waiter removes it when the child ends;
a driver killed before that cannot, so every directory is named after the process that made it
(``pi-squad-child-<pid>.<start time>-<random>``, the start time in clock ticks since boot from
``/proc``, so that a reused pid is not taken for the owner), and the first scratch a process
makes in a temporary directory sweeps the ones there whose owner is gone. A name without an
owner (made by an older pi-squad) is swept once it has not changed for a day.

Only directories directly in the temporary directory, owned by this user and not symbolic
links, are removed, and ``shutil.rmtree`` does not follow links inside them. A child cannot
name one: it may write inside its own scratch, never in the directory that holds them.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable

SCRATCH_PREFIX = "pi-squad-child-"
LEGACY_STALE_SECONDS = 24 * 3600.0


def _owned(prefix: str) -> re.Pattern[str]:
    return re.compile(rf"^{re.escape(prefix)}(?P<pid>[0-9]+)\.(?P<start>[0-9]+)-[a-z0-9_]+$")


def _legacy(prefix: str) -> re.Pattern[str]:
    return re.compile(rf"^{re.escape(prefix)}[a-z0-9_]{{8}}$")


_swept: set[tuple[str, str]] = set()
_swept_lock = threading.Lock()


def process_start(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (``/proc/<pid>/stat`` field 22); ``None``
    where that cannot be read (no such process, no ``/proc``)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: fields resume after the last ")".
    fields = stat[stat.rfind(b")") + 2 :].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def owner_alive(pid: int, start: int) -> bool:
    """Whether the process ``pid`` that started at ``start`` (0: unknown) still runs. Where its
    start time cannot be read, the kernel is asked whether the pid exists at all (so a hidden
    or unreadable process counts as alive: its directory is kept)."""
    started = process_start(pid)
    if started is not None:
        return start in (0, started)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def make_scratch(temp_parent: str | None, prefix: str = SCRATCH_PREFIX) -> str:
    """A new private directory in ``temp_parent`` (the system's temporary directory for
    ``None``) named ``prefix`` and this process; the first one made there sweeps stale ones."""
    parent = temp_parent if temp_parent is not None else tempfile.gettempdir()
    with _swept_lock:
        first = (parent, prefix) not in _swept
        _swept.add((parent, prefix))
    if first:
        sweep_stale_scratch(parent, prefix=prefix)
    pid = os.getpid()
    return tempfile.mkdtemp(prefix=f"{prefix}{pid}.{process_start(pid) or 0}-", dir=parent)


def sweep_stale_scratch(
    parent: str,
    *,
    prefix: str = SCRATCH_PREFIX,
    alive: Callable[[int, int], bool] = owner_alive,
    now: Callable[[], float] = time.time,
) -> list[str]:
    """Remove the scratch directories in ``parent`` whose owner is gone (or, without an owner in
    the name, unchanged for :data:`LEGACY_STALE_SECONDS`); the paths removed."""
    removed: list[str] = []
    owned_name, legacy_name = _owned(prefix), _legacy(prefix)
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        if not is_dir or info.st_uid != os.geteuid():
            continue
        owned = owned_name.match(entry.name)
        if owned is not None:
            stale = not alive(int(owned["pid"]), int(owned["start"]))
        else:
            stale = legacy_name.match(entry.name) is not None and (
                now() - info.st_mtime >= LEGACY_STALE_SECONDS
            )
        if stale:
            with contextlib.suppress(OSError):
                shutil.rmtree(entry.path)
                removed.append(entry.path)
    return removed
