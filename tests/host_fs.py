"""The native file-system adapters for tests, each imported only on the hosts where it runs.

``adapters.fs.posix`` reads ``os.O_NOFOLLOW`` and friends when it is imported, and Windows has
none of them: a test module that imported it unconditionally would fail collection on the
Windows CI job. Test modules therefore take the POSIX adapter from here. On POSIX hosts it is
imported with this module, at collection (a first import inside a test running under pyfakefs
would load it with the emulated ``os``); on Windows it is never imported, and a test that
asks for it is skipped.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from adapters.fs.native import NativeFileSystem

if TYPE_CHECKING or os.name == "posix":
    from adapters.fs.posix import PosixFileSystem

POSIX_ONLY = "the POSIX adapter needs POSIX open flags (os.O_NOFOLLOW), absent on Windows"


def posix_adapter() -> type[PosixFileSystem]:
    """The POSIX adapter class; skips the calling test where it cannot be imported."""
    if os.name != "posix":
        pytest.skip(POSIX_ONLY)
    return PosixFileSystem


def posix_file_system(*, kernel_no_replace: bool = True) -> PosixFileSystem:
    """``PosixFileSystem(...)``; skips the calling test on Windows."""
    return posix_adapter()(kernel_no_replace=kernel_no_replace)


def host_file_system() -> NativeFileSystem:
    """The host's adapter: ``PosixFileSystem()`` on POSIX hosts,
    ``WindowsFileSystem()`` on Windows."""
    if os.name == "nt":
        from adapters.fs.windows import WindowsFileSystem

        return WindowsFileSystem()
    return posix_file_system()
