"""``ProcProcesses``: the ``Processes`` port on Linux's ``/proc``.

A process is recognised by its pid and an identity no reused pid shares: the kernel's boot id,
the pid namespace it was seen from, and its start time in clock ticks since boot (field 22 of
``/proc/<pid>/stat``). Another boot means every process of the old one is gone; another pid
namespace means this process cannot tell (its pids are not the recorded ones). Where ``/proc``
is missing (macOS, Windows) nothing is identified, so nothing is ever recovered there.

``terminate`` signals a process group only after a pidfd of its leader was opened and the
leader's identity read *after* that still matched: the pidfd pins the process, so the signal
cannot reach a process that reused the pid in between.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

from application.ports import Processes
from domain.delegation.session import ProcessRecord

KILL_GRACE_SECONDS = 3.0
POLL_SECONDS = 0.05


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as file:
            return file.read()
    except OSError:
        return None


def _boot_and_namespace() -> str | None:
    boot = _read("/proc/sys/kernel/random/boot_id")
    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None
    if boot is None:
        return None
    return f"{boot.strip()}:{namespace}"


def _stat(pid: int) -> tuple[str, str] | None:
    """``(state, start time)`` of a live pid, or ``None``."""
    text = _read(f"/proc/{pid}/stat")
    if text is None or ")" not in text:
        return None
    # The command name may hold spaces and parentheses: the fields follow the last ")".
    fields = text[text.rindex(")") + 2 :].split()
    if len(fields) < 20:
        return None
    return fields[0], fields[19]


def _signal_probe(pid: int) -> bool | None:
    """``/proc`` shows no such pid: gone only if the kernel agrees (``hidepid`` hides other
    users' processes from ``/proc`` but not from ``kill(pid, 0)``)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return None  # it exists, and is not ours to inspect
    return None  # it exists, yet /proc does not show it: cannot tell


class ProcProcesses:
    def me(self) -> ProcessRecord | None:
        return self.identify(os.getpid())

    def identify(self, pid: int) -> ProcessRecord | None:
        where = _boot_and_namespace()
        stat = _stat(pid)
        if where is None or stat is None or stat[0] in ("Z", "X"):
            return None
        return ProcessRecord(pid, f"{where}:{stat[1]}")

    def alive(self, record: ProcessRecord) -> bool | None:
        where = _boot_and_namespace()
        if where is None:
            return None
        boot, _, rest = record.identity.partition(":")
        namespace, _, start = rest.partition(":")
        here_boot, _, here_namespace = where.partition(":")
        if boot != here_boot:
            return False  # the machine rebooted: every process of that boot is gone
        if namespace != here_namespace:
            return None  # its pids are not ours to read
        stat = _stat(record.pid)
        if stat is None:
            return _signal_probe(record.pid)
        if stat[0] in ("Z", "X"):
            return False
        return stat[1] == start

    def terminate(self, record: ProcessRecord) -> bool:
        pidfd_open = getattr(os, "pidfd_open", None)
        if pidfd_open is None:
            return self.alive(record) is False
        try:
            pidfd = pidfd_open(record.pid)
        except ProcessLookupError:
            return True
        except OSError:
            return self.alive(record) is False
        try:
            if self.alive(record) is not True:
                return self.alive(record) is False
            try:
                leads = os.getpgid(record.pid) == record.pid
            except OSError:
                leads = False
            for number, wait in ((signal.SIGTERM, KILL_GRACE_SECONDS), (signal.SIGKILL, 5.0)):
                # The leader is pinned by ``pidfd`` and matched; a group it leads is its own
                # (a pid that leads a live process group is never reused).
                if leads:
                    with contextlib.suppress(OSError):
                        os.killpg(record.pid, number)
                with contextlib.suppress(OSError):
                    signal.pidfd_send_signal(pidfd, number)
                deadline = time.monotonic() + wait
                while time.monotonic() < deadline:
                    if self.alive(record) is not True:
                        return True
                    time.sleep(POLL_SECONDS)
            return self.alive(record) is not True
        finally:
            os.close(pidfd)


_conforms: type[Processes] = ProcProcesses
