"""What a delegated worker may read and execute (``Confinement.readable``): the system, and
the code its start runs; nothing of the user's home, project or squad root.

A worker's tools are screened by its bridge, yet a worker that escaped its tool list (``bash``
it should not have) would otherwise read anything its user can: other projects, ``~/.ssh``,
``~/.pi``, the delegation grant and every session's captured sources. Confined, it reads only
beneath:

- ``SYSTEM_PATHS`` that exist: the programs, libraries and configuration every process needs
  (``/usr``, ``/bin``, ``/lib*``, ``/etc``: the dynamic loader, TLS certificates, DNS and
  locale settings), ``/proc``, ``/sys`` and ``/dev`` (Node reads ``/proc/self``, cgroup limits
  under ``/sys/fs/cgroup`` and ``/dev/urandom``), and the directory the DNS configuration
  resolves to where it lies elsewhere (systemd-resolved's stub under ``/run``);
- the Python the bridge runs from (``sys.prefix``, ``sys.base_prefix`` and their
  ``exec_prefix`` twins) and the code the worker's start runs, as
  ``adapters.isolation.protected_code`` gathers it for the write rule: pi-squad's packages
  and its import path, the interpreter and its libraries, Node and the Pi package, the
  extension and the bridge;
- what it may write (its private directory, its scratch ``TMPDIR``, ``/dev/null``), which
  ``landlock_exec`` grants reading too.

Found by running Pi, its extension and bridge under this list (tests/e2e/
test_delegation_real.py). Landlock does not govern path resolution, ``O_PATH`` opens, or
connecting to a UNIX socket by path (``RESOLVE_UNIX`` is ABI 9, never handled here), so the
broker's socket in the squad root stays reachable (``broker_wire`` reaches a long path through
an ``O_PATH`` descriptor of its directory).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from domain.isolation import ProtectedPath

SYSTEM_PATHS = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/proc",
    "/sys",
    "/dev",
)
RESOLVER = "/etc/resolv.conf"
PYTHON_PREFIXES = tuple(
    dict.fromkeys((sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix))
)


def worker_readable(
    code: Sequence[ProtectedPath],
    *,
    system: Sequence[str] = SYSTEM_PATHS,
    resolver: str = RESOLVER,
    python: Sequence[str] = PYTHON_PREFIXES,
) -> tuple[str, ...]:
    """Each existing entry of ``system`` and ``python``, the directory ``resolver`` resolves
    to and every path of ``code``, resolved (as the kernel resolves a rule's path), each
    once."""
    found: list[str] = []
    for path in (*system, *python):
        resolved = os.path.realpath(path)
        if os.path.exists(resolved):
            found.append(resolved)
    resolved_resolver = os.path.realpath(resolver)
    if os.path.exists(resolved_resolver):
        found.append(os.path.dirname(resolved_resolver))
    found += (os.path.realpath(protected.path) for protected in code)
    return tuple(dict.fromkeys(found))
