"""A typed, recording fake of the ``TempDirs`` port: names directories, creates nothing."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import attrs

from application.ports import TempDirs


@attrs.define
class RecordingTempDirs:
    """Hands out ``<base>/<prefix><n>`` (never created: the fakes that receive it do not look)
    and records which directories were opened and which were given back."""

    base: str = "/tmp/fake-temp"
    opened: list[str] = attrs.field(factory=list)
    removed: list[str] = attrs.field(factory=list)

    @contextlib.contextmanager
    def temporary_dir(self, prefix: str) -> Iterator[str]:
        path = f"{self.base}/{prefix}{len(self.opened) + 1}"
        self.opened.append(path)
        try:
            yield path
        finally:
            self.removed.append(path)

    @property
    def live(self) -> list[str]:
        """Directories handed out and not yet removed."""
        return [path for path in self.opened if path not in self.removed]


_temp_dirs_conforms: type[TempDirs] = RecordingTempDirs
