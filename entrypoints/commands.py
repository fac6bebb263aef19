"""What a subcommand is to the parser that ``entrypoints.cli`` builds: a handler given the parsed
arguments and the container, returning the exit status, registered through one ``add``
function that also gives every command its ``--json`` option.

The container is only named for the type checker: importing it costs more than a command that
only reads (``status``, ``verify``) is given (``entrypoints/reading_container.py``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from application.ports import FileSystem
    from entrypoints.container import CliContainer

Handler = Callable[[argparse.Namespace, "CliContainer"], int]
AddCommand = Callable[[str, Handler, str], argparse.ArgumentParser]


def read_document(source: str, container: CliContainer, limit: int) -> bytes:
    """What a ``--request``/``--call`` option names: standard input for ``-``, else the file
    (one stable read). At most ``limit`` + 1 bytes are read, so a larger input shows as one; a
    file that cannot be read raises ``StableReadError``."""
    if source == "-":
        return sys.stdin.buffer.read(limit + 1)
    fs: FileSystem = container.fs()
    return fs.read_small(os.path.abspath(source), limit + 1)
