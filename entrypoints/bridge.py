"""``pi-squad bridge --role main|child``: the long-lived process the Pi extension shim spawns.

It speaks the JSON-lines protocol of ``docs/bridge.md`` on stdin/stdout until end of input.
Nothing else ever reaches stdout: file descriptor 1 is pointed at stderr before anything runs,
and the protocol goes to a private duplicate of the original stdout. SIGINT is ignored (a
terminal's Ctrl+C reaches the whole process group; the bridge ends with its input instead).

A role that cannot be built (an unexpected error in the environment or an adapter) fails closed:
the bridge still answers, as ``child-failed-closed``, and every tool call is blocked.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from typing import IO, TYPE_CHECKING, cast

from adapters.bridge import BridgeRole, BridgeServer, RequestedRole, failed_closed_bridge_role
from adapters.bridge.roles import REQUESTED_ROLES
from entrypoints.bridge_root import system_bridge_role

if TYPE_CHECKING:
    import argparse


def build_parser() -> argparse.ArgumentParser:
    import argparse  # noqa: PLC0415 - see main

    parser = argparse.ArgumentParser(
        prog="pi-squad bridge",
        description="Serve the Pi extension shim over stdin/stdout (docs/bridge.md).",
    )
    add_arguments(parser)
    return parser


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--role",
        required=True,
        choices=REQUESTED_ROLES,
        help="main for the user's Pi, child when PI_SQUAD_CHILD=1 (the environment decides more)",
    )


def build_role(requested: RequestedRole, environ: Mapping[str, str]) -> BridgeRole:
    try:
        role = system_bridge_role(requested, environ)
    except Exception as exc:
        import traceback  # noqa: PLC0415 - on this failure only (start-up, see the server)

        sys.stderr.write(f"pi-squad bridge: building the role failed:\n{traceback.format_exc()}")
        return failed_closed_bridge_role(f"the bridge could not build its role: {exc}")
    return role


def serve(
    requested: RequestedRole,
    *,
    stdin: IO[bytes] | None = None,
    stdout: IO[bytes] | None = None,
    log: IO[str] | None = None,
) -> int:
    role = build_role(requested, os.environ)
    output = stdout if stdout is not None else _private_stdout()
    server = BridgeServer(
        role,
        stdin=stdin if stdin is not None else _protocol_stdin(),
        stdout=output,
        log=log if log is not None else sys.stderr,
    )
    try:
        return server.serve()
    finally:
        if stdout is None:
            # Bytes a vanished shim never took would otherwise fail again at interpreter exit.
            with contextlib.suppress(OSError, ValueError):
                output.close()


# A delivery's ``message_end`` is one line of about 33 KiB (the chunk text comes back): read
# from a pipe through Python's default buffer (the pipe's 4 KiB block size) it took nine
# ``read`` calls; a 64 KiB buffer takes it in one or two. Lines are still split on ``\n``
# alone, and the line-length limit is the server's, not the buffer's.
_STDIN_BUFFER_BYTES = 1 << 16


def _protocol_stdin() -> IO[bytes]:
    return open(sys.stdin.fileno(), "rb", buffering=_STDIN_BUFFER_BYTES, closefd=False)


def _private_stdout() -> IO[bytes]:
    """The real stdout for the protocol alone; fd 1 (and ``sys.stdout``) now go to stderr."""
    sys.stdout.flush()
    protocol_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_out


def run(requested: str) -> int:
    """The process entry used by ``pi-squad bridge``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return serve(cast(RequestedRole, requested))


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    # The shim always passes exactly ``--role <role>``: served without argparse, whose import
    # (with gettext and textwrap) is ~4 ms of every child bridge's start-up.
    if len(arguments) == 2 and arguments[0] == "--role" and arguments[1] in REQUESTED_ROLES:
        return run(arguments[1])
    return run(build_parser().parse_args(arguments).role)


if __name__ == "__main__":
    raise SystemExit(main())
