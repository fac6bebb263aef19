"""How every command speaks: one JSON object on stdout with ``--json``, lines for people without.

Exit codes: 0 success, 1 a refused operation (a coded error), 2 a usage error.
"""

from __future__ import annotations

import json
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
    """Run one command; a coded error becomes exit 1 with its message, never a traceback."""
    try:
        return action()
    except PiSquadError as error:
        return report_error(error, as_json=as_json)
    except OSError as error:
        return report_error(SystemFailure.of(error), as_json=as_json)
