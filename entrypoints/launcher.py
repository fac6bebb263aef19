"""The ``pi-squad`` console script: ``pi-squad bridge`` starts without loading the whole CLI,
and ``pi-squad --version`` without building its parser.

Every child Pi process starts a bridge, so its import time is paid per task; a person or a
script asking for the version should not wait for more than Python's own start.
"""

from __future__ import annotations

import sys


def main() -> int:
    if sys.argv[1:2] == ["bridge"]:
        from entrypoints.bridge import main as bridge_main  # noqa: PLC0415 - deliberately lazy

        return bridge_main(sys.argv[2:])
    if sys.argv[1:] == ["--version"]:
        from entrypoints.version import version_text  # noqa: PLC0415 - deliberately lazy

        print(version_text())  # what the parser's --version prints, without importing it
        return 0
    from entrypoints.cli import main as cli_main  # noqa: PLC0415 - deliberately lazy

    return cli_main()
