"""``ChildIsolation`` over Linux Landlock (children can write only beneath granted paths) inside
process namespaces of their own (bubblewrap, ``adapters/isolation/bwrap.py``) where it runs.

``LandlockIsolation.confine`` prefixes a child's argv with ``adapters/isolation/landlock_exec.py``
(run by
path with ``python -P``), which restricts itself with Landlock and then execs the child in the
same process: the pid, process group, session, environment and descriptors ``subprocess``
set up are the child's. The kernel enforces the ruleset on the child and every descendant;
already-open descriptors (the RPC pipes) stay usable. Reading and executing are not restricted,
but for a child confined with a ``readable`` allowlist (a delegated worker): it reads and
executes only beneath those paths and its writable ones.
Where bubblewrap runs, that argv is itself the command of ``bwrap`` (the outer layer): the pid
``subprocess`` sees is then bubblewrap's, whose end ends the child's whole tree.

What Landlock does not cover (ABI <= 7): ``chmod``, ``chown``, ``utime`` and extended
attributes of existing files, writes through descriptors opened before the restriction, the
network, UNIX sockets by path, and below ABI 6 signals and abstract UNIX sockets (the PID
namespace covers signals there). ``MINIMUM_ABI`` is 3 so that ``truncate(2)`` is denied.

``select_isolation`` honours ``PI_SQUAD_ISOLATION`` (``IsolationSetting``, which the
entrypoint's ``Settings`` reads): ``none`` disables isolation (e.g. for tests
of the grounding layer), namespaces included; ``landlock`` keeps Landlock but no namespaces;
anything else, or unset, probes the kernel and bubblewrap and falls back to ``NoIsolation``
(with the reason) where Landlock is unavailable, still enclosing children in namespaces where
bubblewrap runs. ``PI_SQUAD_TEST_LANDLOCK_ABI`` (for tests only) caps the ABI used, so that a
test can show what an older kernel allows (no signal scoping below ABI 6) on a newer one.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

from adapters.isolation import landlock_exec
from adapters.isolation.bwrap import Bubblewrap, probe_bubblewrap
from application.ports import ChildIsolation, IsolationSupport, check_confine_arguments
from domain.errors import IsolationUnavailable

ISOLATION_VARIABLE = "PI_SQUAD_ISOLATION"
ISOLATION_DISABLED = "none"
LANDLOCK_ONLY = "landlock"
TEST_ABI_VARIABLE = "PI_SQUAD_TEST_LANDLOCK_ABI"
MINIMUM_ABI = landlock_exec.MINIMUM_ABI
EXEC_SCRIPT = str(Path(landlock_exec.__file__).resolve())
"""The wrapper, by absolute path: found wherever the project is installed, never shadowed by an
``adapters`` package in the child's working directory."""


@attrs.frozen
class IsolationSetting:
    """What the operator set, as given: ``mode`` is ``PI_SQUAD_ISOLATION`` (``none``,
    ``landlock``; anything else probes), ``abi_cap`` is ``PI_SQUAD_TEST_LANDLOCK_ABI``."""

    mode: str = ""
    abi_cap: str = ""


# Neither set: the kernel and bubblewrap are probed, and the ABI is the kernel's.
PROBED = IsolationSetting()


@attrs.frozen
class NoIsolation:
    """No write isolation available (or wanted): ``confine`` refuses with ``reason``. Children
    are still enclosed in namespaces where ``sandbox`` is given."""

    reason: str
    sandbox: Bubblewrap | None = None
    namespaces_reason: str | None = None

    def support(self) -> IsolationSupport:
        return IsolationSupport(
            mode="none",
            abi=None,
            reason=self.reason,
            namespaces=self.sandbox is not None,
            namespaces_reason=self.namespaces_reason,
        )

    def confine(
        self,
        argv: Sequence[str],
        *,
        writable: Sequence[str],
        read_only: Sequence[str] = (),
        readable: Sequence[str] | None = None,
    ) -> list[str]:
        del argv, writable, read_only, readable
        raise IsolationUnavailable(self.reason)

    def enclose(self, argv: Sequence[str]) -> list[str]:
        return list(argv) if self.sandbox is None else self.sandbox.wrap(argv)


@attrs.frozen
class LandlockIsolation:
    """Landlock at ``abi`` (as probed by ``probe_landlock``); children exec through the wrapper,
    inside ``sandbox``'s namespaces when there is one."""

    abi: int = attrs.field()
    python: str = sys.executable
    sandbox: Bubblewrap | None = None
    namespaces_reason: str | None = None

    @abi.validator
    def _check_abi(self, attribute: attrs.Attribute[int], value: int) -> None:
        del attribute
        if value < MINIMUM_ABI:
            raise ValueError(f"Landlock ABI {value} is below the minimum {MINIMUM_ABI}")

    def support(self) -> IsolationSupport:
        return IsolationSupport(
            mode="landlock",
            abi=self.abi,
            reason=None,
            namespaces=self.sandbox is not None,
            namespaces_reason=self.namespaces_reason,
        )

    def confine(
        self,
        argv: Sequence[str],
        *,
        writable: Sequence[str],
        read_only: Sequence[str] = (),
        readable: Sequence[str] | None = None,
    ) -> list[str]:
        if any(isinstance(given, str) for given in (argv, writable, read_only, readable)):
            raise TypeError("argv and the paths are sequences of strings, not one string")
        check_confine_arguments(argv, writable)
        grants = [argument for path in writable for argument in ("--write", path)]
        if readable is not None:
            if not readable:
                raise ValueError("an empty read allowlist: nothing could be started")
            check_confine_arguments(argv, readable)
            grants += [argument for path in readable for argument in ("--read", path)]
        # The ABI is the parent's choice (what the squad's label says), not the kernel's.
        confined = [self.python, "-P", EXEC_SCRIPT, "--abi", str(self.abi), *grants, "--", *argv]
        if self.sandbox is None:
            return confined
        for path in read_only:
            if not os.path.isabs(path):
                raise ValueError(f"read-only paths must be absolute: {path!r}")
        return self.sandbox.wrap(confined, read_only=read_only, writable=writable)

    def enclose(self, argv: Sequence[str]) -> list[str]:
        return list(argv) if self.sandbox is None else self.sandbox.wrap(argv)


def probe_landlock(abi_cap: str = "") -> IsolationSupport:
    """What the running kernel enforces, at most ``abi_cap`` (``PI_SQUAD_TEST_LANDLOCK_ABI``)
    when it is set; never raises."""
    if sys.platform != "linux":
        return IsolationSupport(
            mode="none", abi=None, reason=f"not Linux ({sys.platform}): Landlock is Linux-only"
        )
    try:
        import landlockpy  # noqa: PLC0415 (imported only where it can work)

        abi = landlockpy.abi_version()
    except (ImportError, OSError) as error:
        return IsolationSupport(mode="none", abi=None, reason=f"Landlock probe failed: {error}")
    cap = abi_cap.strip()
    if cap:
        if not cap.isdigit():
            return IsolationSupport(
                mode="none", abi=None, reason=f"{TEST_ABI_VARIABLE} is {cap!r}, not an ABI number"
            )
        abi = min(abi, int(cap))
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


def select_isolation(setting: IsolationSetting, environ: Mapping[str, str]) -> ChildIsolation:
    """``NoIsolation`` when ``PI_SQUAD_ISOLATION=none`` or the probe finds no usable Landlock,
    else ``LandlockIsolation`` at the probed ABI; either inside bubblewrap's namespaces where
    it runs (found on ``environ``'s ``PATH``), unless ``PI_SQUAD_ISOLATION`` is ``none`` or
    ``landlock``."""
    mode = setting.mode.strip().lower()
    if mode == ISOLATION_DISABLED:
        return NoIsolation(f"disabled by {ISOLATION_VARIABLE}={ISOLATION_DISABLED}")
    sandbox: Bubblewrap | None = None
    namespaces_reason: str | None
    if mode == LANDLOCK_ONLY or sys.platform != "linux":
        namespaces_reason = (
            f"disabled by {ISOLATION_VARIABLE}={LANDLOCK_ONLY}"
            if mode == LANDLOCK_ONLY
            else f"not Linux ({sys.platform})"
        )
    else:
        probe = probe_bubblewrap(environ)
        sandbox, namespaces_reason = probe.sandbox, probe.reason
    support = probe_landlock(setting.abi_cap)
    if support.mode != "landlock" or support.abi is None:
        return NoIsolation(support.reason or "Landlock unavailable", sandbox, namespaces_reason)
    return LandlockIsolation(abi=support.abi, sandbox=sandbox, namespaces_reason=namespaces_reason)
