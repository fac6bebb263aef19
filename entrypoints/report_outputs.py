"""Where each task output of a report goes: inline, or (with ``--out``, when longer than
:data:`INLINE_OUTPUT_BYTES`) written whole beside the report as
``<report-stem>.outputs/<task-id>.txt`` through the ``FileSystem`` port. Nothing is ever
shortened."""

from __future__ import annotations

import hashlib
import os

import attrs

from application.ports import FileSystem
from application.squads.report import SquadReport

INLINE_OUTPUT_BYTES = 8 * 1024
OUTPUTS_DIR_MODE = 0o700


@attrs.frozen
class InlineOutput:
    text: str


@attrs.frozen
class OutputFile:
    """An output written beside the report: ``path`` is relative to the report's directory."""

    path: str
    absolute_path: str
    sha256: str
    bytes: int


OutputPlacement = InlineOutput | OutputFile | None


def utf8_bytes(text: str) -> bytes:
    # Lone surrogates can come out of JSON; they are kept byte-for-byte rather than dropped.
    return text.encode("utf-8", errors="surrogatepass")


def place_outputs(
    report: SquadReport, fs: FileSystem, out_path: str | None
) -> dict[str, OutputPlacement]:
    """Inline every output, except with ``out_path``: then long ones go beside the report."""
    placements: dict[str, OutputPlacement] = {}
    for item in report.tasks:
        output = item.task.output
        if output is None:
            placements[item.task.id] = None
            continue
        data = utf8_bytes(output)
        if out_path is None or len(data) <= INLINE_OUTPUT_BYTES:
            placements[item.task.id] = InlineOutput(output)
            continue
        directory, name = os.path.split(out_path)
        outputs_dir_name = f"{os.path.splitext(name)[0]}.outputs"
        outputs_dir = os.path.join(directory, outputs_dir_name)
        fs.ensure_dir(outputs_dir, OUTPUTS_DIR_MODE)
        file_name = f"{item.task.id}.txt"
        absolute = os.path.join(outputs_dir, file_name)
        fs.write_atomic(absolute, data)
        placements[item.task.id] = OutputFile(
            path=f"{outputs_dir_name}/{file_name}",
            absolute_path=absolute,
            sha256=hashlib.sha256(data).hexdigest(),
            bytes=len(data),
        )
    return placements
