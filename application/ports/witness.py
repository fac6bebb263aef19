"""The file-witness port: may a result computed from some files be reused without reading them
again? A witness is taken before the files are read; while ``unchanged`` holds, the files have
exactly the bytes they had then (the adapter decides how it can know that)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import attrs

from application.ports.filesystem import FileIdentity

__all__ = ["FileWitness", "FileWitnesses"]


@attrs.frozen
class FileWitness:
    """The identities of some files (``None``: nothing there) and the wall and monotonic
    clocks (and the file system's change clock, where it can be read), all taken at one moment
    before a result was computed from those files."""

    paths: tuple[str, ...]
    identities: tuple[FileIdentity | None, ...]
    wall_ns: int
    monotonic_ns: int
    # The identity of the store's change-clock file touched just before (``None``: no reading).
    clock: FileIdentity | None = None
    # Every file there was last changed long enough before the witness that a later change
    # gives it another identity (the racy rule, decided once by the adapter that took it).
    settled: bool = False


class FileWitnesses(Protocol):
    def witness(self, paths: Sequence[str]) -> FileWitness:
        """The identities of ``paths`` now; take it before reading them."""
        ...

    def unchanged(self, witness: FileWitness) -> bool:
        """True only if every file still has its witnessed identity, each was last changed
        long enough before the witness that any later change gives it another identity, and
        the wall clock has not stepped back since: then a result computed from the files after
        the witness was taken still describes them. False whenever in doubt."""
        ...
