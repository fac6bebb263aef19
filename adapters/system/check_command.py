"""A flow mode's deterministic check (``evaluate``'s ``checkCommand``, ``monitor``'s probe): one
shell command in a working directory, its output merged and capped, stopped at its bound.

The output is read as it comes and only the first :data:`CHECK_OUTPUT_CAP_BYTES` are kept (the
rest is drained and counted), so a command that prints gigabytes costs no memory. At the bound
the command's whole process group is killed: a check cannot leave a server running behind it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from typing import IO

from domain.flows.mode_parts import CheckOutcome

# pi-flows' check-command output cap (flows-brief §1).
CHECK_OUTPUT_CAP_BYTES = 16 * 1024
_READ = 64 * 1024
# After the kill, how long the reader may take to see the pipe close.
_DRAIN_SECONDS = 5.0


class _CappedReader(threading.Thread):
    def __init__(self, stream: IO[bytes]) -> None:
        super().__init__(daemon=True)
        self._stream = stream
        self.kept = bytearray()
        self.total = 0

    def run(self) -> None:
        while True:
            block = self._stream.read1(_READ) if hasattr(self._stream, "read1") else b""
            if not block:
                return
            self.total += len(block)
            room = CHECK_OUTPUT_CAP_BYTES - len(self.kept)
            if room > 0:
                self.kept += block[:room]


class ShellCheck:
    """``CheckRun`` over ``/bin/sh -c`` (POSIX; on Windows, the system shell)."""

    def __call__(self, command: str, cwd: str, timeout_ms: int) -> CheckOutcome:
        try:
            process = subprocess.Popen(  # noqa: S602 - the caller's own check command, by design
                command,
                shell=True,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as error:
            return CheckOutcome(None, start_error=error.strerror or type(error).__name__)
        assert process.stdout is not None  # stdout=PIPE
        reader = _CappedReader(process.stdout)
        reader.start()
        timed_out = False
        try:
            process.wait(timeout=timeout_ms / 1000)
        except subprocess.TimeoutExpired:
            timed_out = True
        # Whatever the shell left behind in its group goes too, so the pipe closes.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if hasattr(os, "killpg"):
                os.killpg(process.pid, signal.SIGKILL)
            else:  # Windows: no process groups here; the shell itself
                process.kill()
        process.wait()
        reader.join(_DRAIN_SECONDS)
        process.stdout.close()
        output = bytes(reader.kept).decode("utf-8", errors="replace")
        return CheckOutcome(
            None if timed_out else process.returncode,
            output,
            cut=reader.total > CHECK_OUTPUT_CAP_BYTES,
            timed_out=timed_out,
        )
