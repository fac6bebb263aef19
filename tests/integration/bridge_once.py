"""A bridge process as the shim starts it, fed a few requests until its input ends: for the tests
that check what one bridge answers or loads, without a conversation."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

Request = tuple[str, dict[str, object]]


def serve_once(
    argv: Sequence[str], requests: Sequence[Request], environ: Mapping[str, str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    """``argv`` fed ``requests`` (numbered from 1, one JSON line each) on its input, which then
    ends; what it wrote, once it exited 0."""
    lines = "".join(
        json.dumps({"v": 1, "id": number, "method": method, "params": params}) + "\n"
        for number, (method, params) in enumerate(requests, start=1)
    )
    return subprocess.run(
        list(argv),
        input=lines,
        capture_output=True,
        text=True,
        env=dict(environ),
        cwd=cwd,
        timeout=60,
        check=True,
    )
