"""What the ``pi-squad report`` tests share: exit codes, an output too long to stay inline, the
spec text no report may show, one tampered attestation byte, and the report read as JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from entrypoints.report_outputs import INLINE_OUTPUT_BYTES
from tests.integration.operator_support import run_operator_cli
from tests.runtime_world import RuntimeWorld

REFUSED = 1
USAGE = 2


# multibyte text and backtick runs: a fence must not end early, a byte count must be of UTF-8
LONG_OUTPUT = "".join(
    f"line {i:05d}: résumé 東京 🙂 ``` ```` done\n" for i in range(INLINE_OUTPUT_BYTES // 24)
)


def tamper_one_byte(path: Path) -> None:
    """Change one hex digit of the first chunk's hash in an attestation."""
    data = bytearray(path.read_bytes())
    key = data.index(b'"sha256": "', data.index(b'"chunks"')) + len(b'"sha256": "')
    data[key] = ord("0") if data[key] != ord("0") else ord("1")
    path.write_bytes(bytes(data))


def report_json(world: RuntimeWorld, *extra: str) -> tuple[int, dict[str, Any]]:
    run = run_operator_cli(world, ["report", world.squad_id, "--json", *extra])
    assert run.stderr == "", run.stderr
    return run.returncode, run.json()
