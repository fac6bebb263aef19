"""What a subcommand is to the parser that ``entrypoints.cli`` builds: a handler given the parsed
arguments and the container, returning the exit status, registered through one ``add``
function that also gives every command its ``--json`` option."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from entrypoints.container import CliContainer

Handler = Callable[[argparse.Namespace, CliContainer], int]
AddCommand = Callable[[str, Handler, str], argparse.ArgumentParser]
