"""Stopping a child: SIGTERM to its process group, SIGKILL after a grace period."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import threading

logger = logging.getLogger(__name__)


def terminate(
    process: subprocess.Popen[bytes], reaped: threading.Event, kill_grace: float, child_id: str
) -> None:
    """SIGTERM, SIGKILL if the process is not reaped within ``kill_grace`` seconds; returns once
    ``reaped`` is set (by the thread that waits for the process)."""
    if reaped.is_set():
        return
    signal_group(process, reaped, signal.SIGTERM)
    if reaped.wait(kill_grace):
        return
    logger.warning("child %s ignored SIGTERM; sending SIGKILL", child_id)
    signal_group(process, reaped, getattr(signal, "SIGKILL", signal.SIGTERM))
    reaped.wait()


def signal_group(process: subprocess.Popen[bytes], reaped: threading.Event, number: int) -> None:
    """Signal the child's process group (it leads its own session) or, failing that, it."""
    if reaped.is_set():
        return
    killpg = getattr(os, "killpg", None)
    if killpg is not None:
        try:
            killpg(process.pid, number)
        except ProcessLookupError:
            return
        except OSError:
            pass
        else:
            return
    with contextlib.suppress(OSError):
        process.send_signal(number)
