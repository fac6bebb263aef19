"""The system's temporary directories behind the ``TempDirs`` port."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator

from application.ports import TempDirs


class SystemTempDirs:
    """Directories under the platform's temporary directory (``$TMPDIR`` and friends)."""

    @contextlib.contextmanager
    def temporary_dir(self, prefix: str) -> Iterator[str]:
        with tempfile.TemporaryDirectory(prefix=prefix) as path:
            yield path


_temp_dirs_conforms: type[TempDirs] = SystemTempDirs
