"""Choose the ``FileSystem`` adapter for the host."""

from __future__ import annotations

import os

from application.ports import FileSystem


def file_system_for(os_name: str) -> FileSystem:
    """The adapter for an ``os.name`` value."""
    # Imported lazily: fs_posix reads os.O_NOFOLLOW and friends at import, absent on Windows.
    if os_name == "nt":
        from adapters.fs.windows import WindowsFileSystem  # noqa: PLC0415

        return WindowsFileSystem()
    if os_name == "posix":
        from adapters.fs.posix import PosixFileSystem  # noqa: PLC0415

        return PosixFileSystem()
    raise RuntimeError(f"no file-system adapter for os.name {os_name!r}")


def native_file_system() -> FileSystem:
    return file_system_for(os.name)
