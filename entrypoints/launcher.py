"""The ``pi-squad`` console script: ``pi-squad bridge`` starts without loading the whole CLI.

Every child Pi process starts a bridge, so its import time is paid per task.
"""

from __future__ import annotations

import sys


def main() -> int:
    if sys.argv[1:2] == ["bridge"]:
        from entrypoints.bridge import main as bridge_main  # noqa: PLC0415 - deliberately lazy

        return bridge_main(sys.argv[2:])
    from entrypoints.cli import main as cli_main  # noqa: PLC0415 - deliberately lazy

    return cli_main()
