"""``ChildIsolation`` over Linux Landlock: children can write only beneath granted paths.

``LandlockIsolation.confine`` prefixes a child's argv with ``adapters/landlock_exec.py`` (run by
path with ``python -P``), which restricts itself with Landlock and then execs the child in the
same process: the pid, process group, session, environment and descriptors ``subprocess``
set up are the child's. The kernel enforces the ruleset on the child and every descendant;
already-open descriptors (the RPC pipes) stay usable. Reading and executing are not restricted.

What Landlock does not cover (ABI <= 7): ``chmod``, ``chown``, ``utime`` and extended
attributes of existing files, writes through descriptors opened before the restriction, and
anything outside the filesystem (network, signals, UNIX sockets by path). ``MINIMUM_ABI`` is 3
so that ``truncate(2)`` is denied.

``select_isolation`` honours ``PI_SQUAD_ISOLATION``: ``none`` disables isolation (e.g. for tests
of the grounding layer); anything else, or unset, probes the kernel and falls back to
``NoIsolation`` (with the reason) where Landlock is unavailable.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

from adapters import landlock_exec
from application.ports import ChildIsolation, IsolationSupport
from domain.errors import IsolationUnavailable

ISOLATION_VARIABLE = "PI_SQUAD_ISOLATION"
ISOLATION_DISABLED = "none"
MINIMUM_ABI = landlock_exec.MINIMUM_ABI
EXEC_SCRIPT = str(Path(landlock_exec.__file__).resolve())
"""The wrapper, by absolute path: found wherever the project is installed, never shadowed by an
``adapters`` package in the child's working directory."""


@attrs.frozen
class NoIsolation:
    """No isolation available (or wanted): ``confine`` refuses with ``reason``."""

    reason: str

    def support(self) -> IsolationSupport:
        return IsolationSupport(mode="none", abi=None, reason=self.reason)

    def confine(self, argv: Sequence[str], *, writable: Sequence[str]) -> list[str]:
        del argv, writable
        raise IsolationUnavailable(self.reason)


@attrs.frozen
class LandlockIsolation:
    """Landlock at ``abi`` (as probed by ``probe_landlock``); children exec through the wrapper."""

    abi: int = attrs.field()
    python: str = sys.executable

    @abi.validator
    def _check_abi(self, attribute: attrs.Attribute[int], value: int) -> None:
        del attribute
        if value < MINIMUM_ABI:
            raise ValueError(f"Landlock ABI {value} is below the minimum {MINIMUM_ABI}")

    def support(self) -> IsolationSupport:
        return IsolationSupport(mode="landlock", abi=self.abi, reason=None)

    def confine(self, argv: Sequence[str], *, writable: Sequence[str]) -> list[str]:
        if isinstance(argv, str) or isinstance(writable, str):
            raise TypeError("argv and writable are sequences of strings, not one string")
        if not argv:
            raise ValueError("cannot confine an empty argv")
        grants: list[str] = []
        for path in writable:
            if not os.path.isabs(path):
                raise ValueError(f"writable paths must be absolute: {path!r}")
            grants += ["--write", path]
        return [self.python, "-P", EXEC_SCRIPT, *grants, "--", *argv]


def probe_landlock() -> IsolationSupport:
    """What the running kernel enforces; never raises."""
    if sys.platform != "linux":
        return IsolationSupport(
            mode="none", abi=None, reason=f"not Linux ({sys.platform}): Landlock is Linux-only"
        )
    try:
        import landlockpy  # noqa: PLC0415 (imported only where it can work)

        abi = landlockpy.abi_version()
    except (ImportError, OSError) as error:
        return IsolationSupport(mode="none", abi=None, reason=f"Landlock probe failed: {error}")
    if abi == 0:
        return IsolationSupport(
            mode="none",
            abi=None,
            reason="the kernel has no Landlock (Linux < 5.13, or Landlock not enabled at boot)",
        )
    if abi < MINIMUM_ABI:
        return IsolationSupport(
            mode="none",
            abi=None,
            reason=(
                f"Landlock ABI {abi} cannot deny truncate(2); ABI {MINIMUM_ABI} (Linux 6.2) needed"
            ),
        )
    return IsolationSupport(mode="landlock", abi=abi, reason=None)


def select_isolation(environ: Mapping[str, str]) -> ChildIsolation:
    """``NoIsolation`` when ``PI_SQUAD_ISOLATION=none`` or the probe finds no usable Landlock,
    else ``LandlockIsolation`` at the probed ABI."""
    if environ.get(ISOLATION_VARIABLE, "").strip().lower() == ISOLATION_DISABLED:
        return NoIsolation(f"disabled by {ISOLATION_VARIABLE}={ISOLATION_DISABLED}")
    support = probe_landlock()
    if support.mode != "landlock" or support.abi is None:
        return NoIsolation(support.reason or "Landlock unavailable")
    return LandlockIsolation(abi=support.abi)
