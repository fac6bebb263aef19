"""The three kinds of world a store port's contract runs in, and the file system each stores on.

``memory`` is the port's fake; ``file-memory`` is the file store over the in-memory file
system; ``file-disk`` is the file store on the real file system.
"""

from __future__ import annotations

from pathlib import Path

from adapters.fs.posix import PosixFileSystem
from application.ports import FileSystem
from tests.fakes.filesystem import InMemoryFileSystem

KINDS = ["memory", "file-memory", "file-disk"]


def store_file_system(kind: str, root: Path) -> tuple[FileSystem, str]:
    """The file system a world of ``kind`` stores on, with ``root`` made on it as a directory:
    the real one for ``file-disk``, an in-memory one for the others."""
    if kind == "file-disk":
        disk = PosixFileSystem()
        disk.ensure_dir(str(root), 0o700)
        return disk, str(root)
    memory = InMemoryFileSystem()
    return memory, memory.add_dir(str(root))
