"""The ``FileSystem`` port on Windows.

Windows has no ``O_NOFOLLOW``: ``os.open`` follows a symlink or junction. So the stable read
refuses at ``lstat`` time anything marked as a reparse point (symbolic links, junctions, and
other reparse points such as cloud placeholders: refusing those too is the safe side), and
refuses when ``st_file_attributes`` is absent because it then cannot tell. After opening, the
``fstat`` identity must equal the ``lstat`` one in device (volume serial), inode (file index),
size and mtime; a path swapped for a link after the ``lstat`` therefore opens a different
file and is ``CHANGED``. A zero file index means the file system cannot identify the file,
which is refused as ``UNREADABLE`` rather than trusted.

``create_file_exclusive`` checks ``lexists`` before its ``O_EXCL`` open because Windows
``CREATE_NEW`` follows a dangling symbolic link and creates the link's target. That check and
the open are two steps; the directories pi-squad creates into are its own staging
directories, which no other process is expected to write.

Mode bits are best effort, as the contract allows: Windows honours only the read-only bit.
``fsync_dir`` is a no-op because a directory cannot be opened for ``FlushFileBuffers``
through ``os.open``; NTFS journals the rename metadata itself. ``rename_no_replace`` relies on
``os.rename`` (``MoveFileExW`` without ``MOVEFILE_REPLACE_EXISTING``), which already refuses
an existing target; the explicit ``lexists`` check makes the refusal the same on every file
system and gives the same ``FileExistsError``.
"""

from __future__ import annotations

import errno
import os
import stat

from adapters.fs.native import NativeFileSystem
from application.ports import FileSystem, ReadFailure, StableReadError

# stat.FILE_ATTRIBUTE_REPARSE_POINT, spelled out because type stubs offer it only on Windows.
FILE_ATTRIBUTE_REPARSE_POINT = 0x400

_BINARY = getattr(os, "O_BINARY", 0)
_NO_INHERIT = getattr(os, "O_NOINHERIT", 0)


def _reparse_point(status: os.stat_result) -> bool | None:
    """Whether ``status`` describes a reparse point; ``None`` when the attributes are absent."""
    attributes: int | None = getattr(status, "st_file_attributes", None)
    if attributes is None:
        return None
    return bool(attributes & FILE_ATTRIBUTE_REPARSE_POINT)


class WindowsFileSystem(NativeFileSystem):
    FLAVOUR = "windows"
    READ_FLAGS = os.O_RDONLY | _BINARY | _NO_INHERIT
    CREATE_FLAGS = os.O_CREAT | os.O_EXCL | os.O_WRONLY | _BINARY | _NO_INHERIT
    # ``st_ctime`` is the creation time on Windows: no file's ctime reads the change clock.
    CTIME_IS_CHANGE_TIME = False

    def _refuse_platform_link(self, path: str, status: os.stat_result) -> None:
        reparse = _reparse_point(status)
        if reparse is None:
            raise StableReadError(
                ReadFailure.UNREADABLE,
                path,
                "the file attributes are unavailable, so a reparse point cannot be ruled out",
            )
        if reparse:
            raise StableReadError(
                ReadFailure.SYMLINK,
                path,
                "the final component is a reparse point (symbolic link, junction or similar)",
            )

    def _is_link_like(self, status: os.stat_result) -> bool:
        return stat.S_ISLNK(status.st_mode) or _reparse_point(status) is not False

    def _refuse_uncertain_identity(self, path: str, status: os.stat_result) -> None:
        if status.st_ino == 0:
            raise StableReadError(
                ReadFailure.UNREADABLE,
                path,
                "the file system reports no file index, so the opened file cannot be pinned",
            )

    def _refuse_existing_before_create(self, path: str) -> None:
        # CREATE_NEW follows a dangling symbolic link and creates its target, so a link
        # planted at the path would redirect the write. Refuse anything already there.
        if os.path.lexists(path):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), path)

    def _apply_dir_mode(self, path: str, mode: int) -> None:
        """Nothing: ``os.mkdir`` already applied what Windows can (3.13+ maps 0700 to an ACL)."""

    def _apply_file_mode(self, descriptor: int, mode: int) -> None:
        """Nothing: the ``os.open`` mode already set or cleared the read-only bit."""

    def _fsync_dir(self, path: str) -> None:
        """Nothing: see the module docstring."""

    def _mark_read_only(self, path: str) -> None:
        os.chmod(path, stat.S_IREAD)

    def _reclaim_access(self, path: str, mode: int) -> bool:
        """Nothing: Windows modes are only the read-only bit, which never stops a read."""
        return False

    def _retry_removal(self, function_name: str, path: str, error: BaseException) -> bool:
        # Windows refuses to delete a read-only file (the published canonical spec is one);
        # clear the bit and try that one entry again.
        if not isinstance(error, PermissionError) or function_name not in (
            "unlink",
            "remove",
            "rmdir",
        ):
            return False
        os.chmod(path, stat.S_IWRITE | stat.S_IREAD)
        if function_name == "rmdir":
            os.rmdir(path)
        else:
            os.unlink(path)
        return True


_IMPLEMENTS_PORT: type[FileSystem] = WindowsFileSystem
