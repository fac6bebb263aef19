"""What the ``create_squad`` tests look for among the calls the use case made: the staging
directories it created, and the clock it ran on."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from tests.fakes.fake_tree import FsCall
from tests.fakes.publication import MemoryPublication

STAGING_SHAPE = re.compile(r"^(?P<id>[a-z0-9-]+)\.creating\.[0-9a-f]{32}$")
CLOCK_START = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def staging_dirs_made(world: MemoryPublication) -> list[FsCall]:
    """The ``make_dir_exclusive`` calls that created a staging directory."""
    return [
        call
        for call in world.fs.calls_of("make_dir_exclusive")
        if STAGING_SHAPE.match(call.path.rsplit("/", 1)[-1])
    ]
