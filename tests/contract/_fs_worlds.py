"""The file systems the ``FileSystem`` contract tests run against, behind one small interface.

A *world* is one adapter plus a place to build fixtures in:

* ``posix-real`` (``windows-real`` on a Windows host): the host adapter on pytest's
  ``tmp_path``;
* ``posix-fake``: ``PosixFileSystem`` under pyfakefs emulating Linux;
* ``windows-fake``: ``WindowsFileSystem`` under pyfakefs emulating Windows.

What pyfakefs 6.3 cannot model, and what is done about it:

* FIFOs, sockets and devices are inert entries: a mode bit and nothing else (and
  ``os.mkfifo`` is not faked at all: it would create a real FIFO). They are built as entries
  with the right ``st_mode`` so the ``lstat``/``fstat`` refusals are exercised; the *not
  blocking* half of the FIFO rule needs a real FIFO and is tested in the real world only.
* ``FakeStatResult.st_file_attributes`` tests the file type with ``&`` instead of comparing
  ``S_IFMT``, so every regular file (``S_IFREG`` shares a bit with ``S_IFLNK``) looks like a
  reparse point. The property is replaced, for the duration of a Windows world, by a correct
  one. The same replacement lets a test mark an inode as a non-symlink reparse point (a
  junction, which pyfakefs cannot create) or hide the attributes entirely.
* pyfakefs lets uid 0 ignore permission bits, as POSIX root may; Windows has no such user
  for the read-only attribute, so the Windows world runs as an ordinary uid.
* ``os.open(O_CREAT | O_EXCL | O_NOFOLLOW)`` on a symlink fails with ``ELOOP`` under the
  emulator, where POSIX (and Linux) fail it with ``EEXIST``; the test accepts either in the
  fake world, since both refuse the creation.
* ``os.open`` of an existing file chmods it to ``0o777 & ~umask`` and so bumps its ctime; the
  adapters leave ctime out of the ``lstat``-versus-``fstat`` comparison for that reason (see
  ``adapters/fs/native.py``) and tests never read a mode back after a read in a fake world.
  A read whose descriptor is open while another thread opens the same file still sees that
  ctime move at its closing ``fstat`` (``CHANGED``), and the emulator's descriptor table is
  unguarded: pyfakefs is not thread-safe, so the fake Pi harness runs a child's sibling tool
  executions one at a time in a fake world (``FakePiChild.serialise_executions``).
* The kernel ``RENAME_NOREPLACE`` call goes through ctypes, below any emulation: it would rename
  real files at the emulated paths. A fake world therefore builds its POSIX adapter with
  ``kernel_no_replace=False`` (``emulated_posix_file_system``), and the kernel call is made
  to fail loudly there should any adapter try it, so fake worlds test the fallback and the
  real world tests the kernel call.
* Memory use is not meaningful when the emulator holds file contents in memory: the
  bounded-memory digest test runs in the real world only.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Literal

import attrs
import pytest
from pyfakefs import helpers
from pyfakefs.fake_filesystem import FakeFilesystem, OSType
from pyfakefs.fake_filesystem_unittest import Patcher
from pyfakefs.helpers import FakeStatResult

import adapters.fs.posix
from adapters.fs.native import NativeFileSystem
from adapters.fs.windows import FILE_ATTRIBUTE_REPARSE_POINT, WindowsFileSystem
from domain.paths import PathFlavour
from tests.host_fs import POSIX_ONLY, posix_adapter, posix_file_system

if TYPE_CHECKING or os.name == "posix":  # fs_posix cannot be imported on Windows
    from adapters.fs.posix import PosixFileSystem

WorldKind = Literal["posix-real", "windows-real", "posix-fake", "windows-fake"]
REAL_KIND: WorldKind = "windows-real" if os.name == "nt" else "posix-real"
WORLD_KINDS: tuple[WorldKind, ...] = (REAL_KIND, "posix-fake", "windows-fake")
POSIX_KINDS = tuple(kind for kind in WORLD_KINDS if kind.startswith("posix"))
WINDOWS_KINDS = tuple(kind for kind in WORLD_KINDS if kind.startswith("windows"))
FAKE_KINDS = tuple(kind for kind in WORLD_KINDS if kind.endswith("fake"))


def in_worlds(*kinds: WorldKind) -> pytest.MarkDecorator:
    """Run a test only in ``kinds`` (overrides the ``world`` fixture's own parameters)."""
    return pytest.mark.parametrize("world", kinds, indirect=True)


class Hung(Exception):
    """Raised by ``deadline``; deliberately not an ``OSError``, which adapters translate."""


_FILE_ATTRIBUTE_DIRECTORY = 0x10
_FILE_ATTRIBUTE_DEVICE = 0x40
_FILE_ATTRIBUTE_NORMAL = 0x80


class InterleavingMixin(NativeFileSystem):
    """Runs a test's callback where a concurrent writer could strike: just before the read
    open, and before each block read (called with the 1-based block number)."""

    before_open: Callable[[str], None] | None = None
    before_read: Callable[[int], None] | None = None
    reads: int = 0

    def _open_for_read(self, path: str) -> int:
        if self.before_open is not None:
            self.before_open(path)
        return super()._open_for_read(path)

    def _read_block(self, descriptor: int, size: int) -> bytes:
        self.reads += 1
        if self.before_read is not None:
            self.before_read(self.reads)
        return super()._read_block(descriptor, size)


if TYPE_CHECKING or os.name == "posix":

    class InterleavingPosix(InterleavingMixin, PosixFileSystem):
        pass


def emulated_posix_file_system() -> PosixFileSystem:
    """The POSIX adapter for a file system pyfakefs emulates: never the kernel rename."""
    return posix_file_system(kernel_no_replace=False)


def _no_kernel_call_under_emulation() -> None:
    raise AssertionError(
        "the kernel rename was called under pyfakefs: build the adapter with "
        "kernel_no_replace=False (emulated_posix_file_system)"
    )


def refuse_kernel_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """While a file system is emulated, an adapter that would call the kernel fails loudly."""
    monkeypatch.setattr(
        adapters.fs.posix, "_kernel_rename_no_replace", _no_kernel_call_under_emulation
    )


class InterleavingWindows(InterleavingMixin, WindowsFileSystem):
    pass


@attrs.define
class _AttributeOverrides:
    """Inodes the Windows world reports as reparse points, or without attributes at all."""

    reparse: set[int] = attrs.field(factory=set)
    hidden: set[int] = attrs.field(factory=set)


_OVERRIDES = _AttributeOverrides()


def _windows_file_attributes(self: FakeStatResult) -> int:
    if not self.is_windows or self.st_ino in _OVERRIDES.hidden:
        raise AttributeError("'os.stat_result' object has no attribute 'st_file_attributes'")
    kind = stat.S_IFMT(self.st_mode)
    attributes = {
        stat.S_IFDIR: _FILE_ATTRIBUTE_DIRECTORY,
        stat.S_IFREG: _FILE_ATTRIBUTE_NORMAL,
        stat.S_IFCHR: _FILE_ATTRIBUTE_DEVICE,
        stat.S_IFBLK: _FILE_ATTRIBUTE_DEVICE,
        stat.S_IFLNK: FILE_ATTRIBUTE_REPARSE_POINT,
    }.get(kind, 0)
    if self.st_ino in _OVERRIDES.reparse:
        attributes |= FILE_ATTRIBUTE_REPARSE_POINT
    return attributes


@attrs.frozen
class World:
    kind: WorldKind
    root: str
    fake: FakeFilesystem | None

    @property
    def flavour(self) -> PathFlavour:
        return "windows" if self.kind.startswith("windows") else "posix"

    @property
    def real(self) -> bool:
        return self.fake is None

    def adapter(self) -> NativeFileSystem:
        if self.flavour == "windows":
            return WindowsFileSystem()
        return posix_file_system(kernel_no_replace=self.real)

    def interleaving(self) -> InterleavingMixin:
        if self.flavour == "windows":
            return InterleavingWindows()
        posix_adapter()  # skips on Windows, where InterleavingPosix is not defined
        return InterleavingPosix(kernel_no_replace=self.real)

    @property
    def separator(self) -> str:
        return "\\" if self.flavour == "windows" else "/"

    def path(self, relative: str) -> str:
        """``relative`` is written with ``/`` and spelled in the world's flavour."""
        return self.separator.join((self.root, *relative.split("/")))

    def write(self, name: str, data: bytes) -> str:
        path = self.path(name)
        with open(path, "wb") as handle:
            handle.write(data)
        return path

    def mkdir(self, name: str) -> str:
        path = self.path(name)
        os.mkdir(path)
        return path

    def symlink(self, target: str, name: str) -> str:
        path = self.path(name)
        os.symlink(target, path, target_is_directory=os.path.isdir(target))
        return path

    def make_old(self, path: str) -> None:
        """Put mtime far in the past, so any later write visibly moves it whatever the
        timestamp granularity of the file system."""
        os.utime(path, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))

    def fifo(self, name: str) -> str:
        if self.flavour == "windows":
            pytest.skip("Windows has no FIFOs")
        path = self.path(name)
        if self.real:
            os.mkfifo(path)
        else:
            os.mknod(path, stat.S_IFIFO | 0o600)
        return path

    def unix_socket(self, name: str) -> str:
        if self.flavour == "windows":
            pytest.skip("the Windows adapter cannot meet a UNIX socket entry through os.lstat")
        path = self.path(name)
        if self.fake is not None:
            self.fake.create_file(path, st_mode=stat.S_IFSOCK | 0o600)
            return path
        # sun_path holds about 100 bytes, less than a tmp_path can be: bind a relative name.
        previous = os.getcwd()
        os.chdir(self.root)
        try:
            with socket.socket(socket.AF_UNIX) as server:
                server.bind(name)
        finally:
            os.chdir(previous)
        return path

    def device(self) -> str:
        if self.fake is None:
            if self.flavour == "windows":
                pytest.skip("no device path to lstat under the Windows real world")
            return "/dev/null"
        path = self.path("device")
        self.fake.create_file(path, st_mode=stat.S_IFCHR | 0o600)
        return path

    def mark_reparse_point(self, path: str) -> None:
        """Report ``path`` as a non-symlink reparse point (a junction, say)."""
        _OVERRIDES.reparse.add(os.lstat(path).st_ino)

    def hide_file_attributes(self, path: str) -> None:
        _OVERRIDES.hidden.add(os.lstat(path).st_ino)

    def mode(self, path: str) -> int:
        return stat.S_IMODE(os.lstat(path).st_mode)


@contextlib.contextmanager
def open_world(kind: WorldKind, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    if kind in ("posix-real", "windows-real"):
        yield World(kind=kind, root=str(tmp_path), fake=None)
        return
    if kind == "posix-fake" and os.name != "posix":
        pytest.skip(POSIX_ONLY)
    with Patcher() as patcher:
        fake = patcher.fs
        assert fake is not None
        refuse_kernel_calls(monkeypatch)
        if kind == "windows-fake":
            fake.os = OSType.WINDOWS
            monkeypatch.setattr(
                FakeStatResult, "st_file_attributes", property(_windows_file_attributes)
            )
            # pyfakefs lets uid 0 ignore permission bits; on Windows nobody ignores the
            # read-only attribute, and these tests may well run as root in a container.
            monkeypatch.setattr(helpers, "USER_ID", 1000)
            root = "C:\\work"
        else:
            fake.os = OSType.LINUX
            root = "/work"
        fake.create_dir(root)
        try:
            yield World(kind=kind, root=root, fake=fake)
        finally:
            _OVERRIDES.reparse.clear()
            _OVERRIDES.hidden.clear()


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Fail instead of hanging: a blocked ``open``/``read`` is interrupted by SIGALRM."""

    def expire(_signal: int, _frame: FrameType | None) -> None:
        raise Hung(f"blocked for more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
