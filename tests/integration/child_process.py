"""A command started as ``PiRpcRuntime.spawn`` starts Pi (adapters/pi_rpc/runtime.py): in a
session of its own, over pipes, with the environment passed through; for the tests of what a
confined child can and cannot do."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path


def popen(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """``argv`` in ``cwd``, in this process's environment with ``env`` over it."""
    return subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        start_new_session=True,
    )
