"""Where a protocol's requests come in: most APIs answer on a fixed set of paths (Google's,
whose path names the model, matches its own pattern instead)."""

from __future__ import annotations

from typing import ClassVar


class AnswersOnPaths:
    """``WireProtocol.handles`` for a protocol whose requests come to the fixed ``paths``."""

    paths: ClassVar[tuple[str, ...]]

    def handles(self, path: str) -> bool:
        return path in self.paths
