"""A bench's spec bytes written into a project directory and published from there as a squad."""

from __future__ import annotations

from pathlib import Path

from application.squads.create_squad import PublishedSquad
from bench.workspace import Adapters, publish, write_spec


def publish_spec(adapters: Adapters, root: Path, project: Path, data: bytes) -> PublishedSquad:
    """``data`` written as ``project``'s spec, then published as a squad under ``root``."""
    write_spec(project, data)
    return publish(adapters, root, project, data)
