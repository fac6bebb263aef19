"""``report``, ``watch`` and ``extension-path``: what a person uses around a squad."""

from __future__ import annotations

import argparse
import os

from domain.errors import ErrorCode, SquadOperationError
from entrypoints.children import EXTENSION_DIR
from entrypoints.commands import AddCommand
from entrypoints.container import CliContainer
from entrypoints.output import EXIT_OK, emit_json
from entrypoints.report import add_report_command
from entrypoints.watch import add_watch_command


def cmd_extension_path(args: argparse.Namespace, container: CliContainer) -> int:
    manifest = os.path.join(EXTENSION_DIR, "package.json")
    if not os.path.isfile(manifest):
        raise SquadOperationError(
            ErrorCode.RUNTIME_UNAVAILABLE,
            f"the Pi package is missing: {manifest} does not exist; reinstall pi-squad "
            "(uv sync in a checkout) so that entrypoints/pi/ is present",
        )
    if args.json:
        emit_json({"path": EXTENSION_DIR})
    else:
        print(EXTENSION_DIR)
    return EXIT_OK


def add_operator_commands(add: AddCommand) -> None:
    """In this order in `pi-squad --help`."""
    add_report_command(add)
    add_watch_command(add)
    add(
        "extension-path",
        cmd_extension_path,
        "Print the directory of pi-squad's Pi package, for `pi -e <path>` or an entry in "
        "Pi's `packages` setting.",
    )
