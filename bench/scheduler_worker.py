"""One scheduler drive in a fresh process (``python -m bench.scheduler_worker '<json>'``), so
the peak RSS is the driver's alone. Prints one JSON object.

``{"root": R, "squad_id": S, "tasks": N}``: drive squad ``S`` under root ``R`` (prepared and
restored by ``bench.scheduler``) from the first reconcile to review over instantly settling
fake children, as ``bench.scheduler_drive.drive`` does. Reports the resident set before the drive
(every module imported, the squad not yet read), the high-water mark of the whole process
(``VmHWM``) after it, and the drive's time.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from bench.create_worker import current_rss_kib, peak_rss_kib
from bench.scheduler_drive import drive
from bench.workspace import Adapters


def main(argv: Sequence[str] | None = None) -> int:
    request = json.loads((sys.argv[1:] if argv is None else list(argv))[0])
    adapters = Adapters.real()
    before = current_rss_kib()
    run = drive(adapters, Path(request["root"]), request["squad_id"], request["tasks"])
    print(
        json.dumps({"rss_before_kib": before, "peak_kib": peak_rss_kib(), "total_ms": run["total"]})
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
