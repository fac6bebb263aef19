"""The ``FileSystem`` port on POSIX (Linux, macOS, the BSDs).

The stable read relies on ``O_NOFOLLOW`` (a final symlink swapped in after ``lstat`` fails the
open with ``ELOOP``; FreeBSD reports ``EMLINK``) and ``O_NONBLOCK`` (a FIFO swapped in opens
at once instead of waiting for a writer, and the ``fstat`` check then refuses it).

``rename_no_replace`` asks the kernel to refuse an existing target atomically: ``renameat2``
with ``RENAME_NOREPLACE`` on Linux, ``renamex_np`` with ``RENAME_EXCL`` on macOS. Plain
``rename(2)`` would silently replace an existing *empty directory*, which is exactly the final
squad directory case. Where the kernel or file system lacks the flag (``ENOSYS``, ``EINVAL``,
``ENOTSUP``), the fallback checks ``lexists`` and then renames; an entry created at the target
between those two steps would be replaced if it is an empty directory or a file. pi-squad
names targets inside its own squad root under its own lock, so only a process outside
pi-squad could win that race.
"""

from __future__ import annotations

import errno
import functools
import os
import stat
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from adapters.fs.native import NativeFileSystem
from application.ports import FileSystem

if TYPE_CHECKING:
    # Imported where the libc call is bound, on the first rename that must not replace: a
    # child's bridge rarely makes one, and ``ctypes`` is ~2 ms of its start-up.
    import ctypes

_AT_FDCWD = -100
_RENAME_NOREPLACE = 1  # <linux/fs.h>
_RENAME_EXCL = 0x00000004  # <stdio.h> on macOS
_UNSUPPORTED = frozenset({errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP})

_KernelRename = Callable[[bytes, bytes], int]


def _linux_call(libc: ctypes.CDLL) -> _KernelRename | None:
    import ctypes  # noqa: PLC0415 - see the import above

    renameat2 = getattr(libc, "renameat2", None)  # glibc >= 2.28, musl >= 1.2.2
    if renameat2 is None:
        return None
    renameat2.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    renameat2.restype = ctypes.c_int

    def call(source: bytes, target: bytes) -> int:
        result: int = renameat2(_AT_FDCWD, source, _AT_FDCWD, target, _RENAME_NOREPLACE)
        return result

    return call


def _darwin_call(libc: ctypes.CDLL) -> _KernelRename | None:
    import ctypes  # noqa: PLC0415 - see the import above

    renamex_np = getattr(libc, "renamex_np", None)  # macOS >= 10.12
    if renamex_np is None:
        return None
    renamex_np.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint]
    renamex_np.restype = ctypes.c_int

    def call(source: bytes, target: bytes) -> int:
        result: int = renamex_np(source, target, _RENAME_EXCL)
        return result

    return call


_BINDERS: dict[str, Callable[[ctypes.CDLL], _KernelRename | None]] = {
    "linux": _linux_call,
    "darwin": _darwin_call,
}


@functools.cache
def _kernel_rename_no_replace() -> _KernelRename | None:
    """The libc entry point that renames without replacing, or ``None`` if there is none."""
    binder = _BINDERS.get(sys.platform)
    if binder is None:
        return None
    import ctypes  # noqa: PLC0415 - see the import above

    try:
        return binder(ctypes.CDLL(None, use_errno=True))
    except OSError:
        return None


class PosixFileSystem(NativeFileSystem):
    FLAVOUR = "posix"
    READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    CREATE_FLAGS = os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    SYMLINK_OPEN_ERRNOS = frozenset({errno.ELOOP, errno.EMLINK})

    def __init__(self, *, kernel_no_replace: bool = True) -> None:
        """``kernel_no_replace=False`` never makes the libc call and always takes the
        ``lexists``-then-``rename`` fallback: the path taken on kernels without
        ``RENAME_NOREPLACE``, and the only correct one under a file-system emulator (pyfakefs),
        since the libc call acts on the real kernel and would rename real files at the
        emulated paths. Tests that emulate the file system choose it explicitly."""
        self._kernel_no_replace = kernel_no_replace

    def _refuse_platform_link(self, path: str, status: os.stat_result) -> None:
        """Nothing: on POSIX ``S_ISLNK`` is the whole story."""

    def _refuse_uncertain_identity(self, path: str, status: os.stat_result) -> None:
        """Nothing: ``O_NOFOLLOW`` already pinned the object the path named."""

    def _refuse_existing_before_create(self, path: str) -> None:
        """Nothing: ``O_CREAT | O_EXCL`` fails on any existing entry, a symlink included."""

    def _apply_dir_mode(self, path: str, mode: int) -> None:
        # mkdir's mode passes through the umask; the contract wants exactly 0700.
        os.chmod(path, mode)

    def _apply_file_mode(self, descriptor: int, mode: int) -> None:
        os.fchmod(descriptor, mode)

    def _fsync_dir(self, path: str) -> None:
        descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)

    def _rename_no_replace(self, source: str, target: str) -> None:
        kernel = _kernel_rename_no_replace() if self._kernel_no_replace else None
        if kernel is not None:
            if kernel(os.fsencode(source), os.fsencode(target)) == 0:
                return
            import ctypes  # noqa: PLC0415 - loaded already: binding the call imported it

            number = ctypes.get_errno()
            if number not in _UNSUPPORTED:
                raise OSError(number, os.strerror(number), source, None, target)
        super()._rename_no_replace(source, target)

    def _mark_read_only(self, path: str) -> None:
        os.chmod(path, stat.S_IRUSR)

    def _reclaim_access(self, path: str, mode: int) -> bool:
        try:
            status = os.lstat(path)
        except OSError:
            return False  # missing, or its directory is not searchable (reclaim that first)
        kind = stat.S_IFMT(status.st_mode)
        if kind not in (stat.S_IFREG, stat.S_IFDIR) or status.st_uid != os.geteuid():
            return False
        current = stat.S_IMODE(status.st_mode)
        if current & mode == mode:
            return False
        try:
            # ``fchmodat(AT_SYMLINK_NOFOLLOW)``: the entry itself, never a link swapped in
            # since the ``lstat`` (glibc pins it with ``O_PATH``; macOS has ``lchmod``). Where
            # the platform cannot promise that, nothing is changed.
            os.chmod(path, current | mode, follow_symlinks=False)
        except (NotImplementedError, OSError):
            return False
        return True


_IMPLEMENTS_PORT: type[FileSystem] = PosixFileSystem
