"""The ``pi-squad`` command line with one injected file-system fault, for crash tests only.

``python -m tests.support.fault_cli <operation>:<n>:<action> <pi-squad arguments...>`` builds
the CLI's own container with its ``fs`` provider overridden by a ``FaultingFileSystem`` around
the native adapter, then runs ``entrypoints.cli.main`` exactly as ``pi-squad`` does. Production
code has no fault seam: the fault lives in this test-only entry and the wrapper it installs.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from adapters.fs.platform import native_file_system
from entrypoints.cli import main as cli_main
from entrypoints.container import CliContainer
from tests.fakes.faulting_filesystem import FaultingFileSystem, FaultPoint


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if not arguments:
        raise SystemExit("usage: python -m tests.support.fault_cli <fault point> <arguments...>")
    point = FaultPoint.parse(arguments[0])  # malformed: an error, never a run without the fault
    container = CliContainer()
    container.fs.override(FaultingFileSystem(native_file_system(), point))
    return cli_main(arguments[1:], container)


if __name__ == "__main__":
    raise SystemExit(main())
