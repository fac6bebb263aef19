"""How every command speaks: one JSON object on stdout with ``--json``, lines for people without.

Exit codes: 0 success, 1 a refused operation (a coded error), 2 a usage error.
"""

from __future__ import annotations

import json
import os
import select
import sys
from collections.abc import Callable
from typing import Any, TextIO

from domain.errors import ErrorCode, PiSquadError, SystemFailure

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2


def emit_json(payload: dict[str, Any], stream: TextIO | None = None) -> None:
    out = stream if stream is not None else sys.stdout
    out.write(json.dumps(payload, ensure_ascii=True, separators=(",", ":")) + "\n")
    out.flush()


def error_payload(code: ErrorCode | str, message: str) -> dict[str, Any]:
    return {"error": {"code": str(code), "message": message}}


def report_error(error: PiSquadError, *, as_json: bool) -> int:
    if as_json:
        emit_json(error_payload(error.code, error.message))
    else:
        sys.stderr.write(f"pi-squad: {error.code}: {error.message}\n")
    return EXIT_REFUSED


def run_reporting(action: Callable[[], int], *, as_json: bool) -> int:
    """Run one command; a coded error becomes exit 1 with its message, never a traceback.

    A reader that stops reading (``pi-squad status | head -1``) ends the command quietly with
    status 0, as ``git`` and ``ls`` do: what it did not read was not wanted."""
    try:
        try:
            code = action()
            sys.stdout.flush()  # a reader gone shows here, not in the interpreter's last flush
            return code
        except BrokenPipeError as error:
            if not stdout_reader_gone():
                return report_error(SystemFailure.of(error), as_json=as_json)
        except PiSquadError as error:
            return report_error(error, as_json=as_json)
        except OSError as error:
            return report_error(SystemFailure.of(error), as_json=as_json)
    except BrokenPipeError:
        if not stdout_reader_gone():
            raise
    discard_stdout()
    return EXIT_OK


def stdout_reader_gone() -> bool:
    """Whether standard output is a pipe nobody reads any more (EPIPE on it)."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        return True
    except (OSError, ValueError):
        return False
    try:
        descriptor = sys.stdout.fileno()
    except (OSError, ValueError):
        return False  # not a file (a test's capture): it cannot have lost its reader
    if not hasattr(select, "poll"):
        return False
    poller = select.poll()
    poller.register(descriptor, select.POLLOUT)
    return any(events & select.POLLERR for _, events in poller.poll(0))


def discard_stdout() -> None:
    """Point standard output at the null device, so that what is still buffered for the gone
    reader is dropped at exit instead of failing the interpreter's last flush."""
    try:
        descriptor = sys.stdout.fileno()
    except (OSError, ValueError):
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, descriptor)
    finally:
        os.close(null)
