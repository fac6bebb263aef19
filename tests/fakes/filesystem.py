"""``InMemoryFileSystem``: a typed, recording fake of the ``FileSystem`` port over a
``FakeTree``. It implements every port method with the documented refusals (exclusive creation,
no-replace rename, symlinks never followed by reads, ``is_dir`` or ``remove_tree``), records each
call, and lets a test run an action just before the ``n``-th call of an operation: raise an error
there, or change the tree the way a concurrent process would.

``tests/fakes/faulting_filesystem.py`` holds the wrappers that record or fault a real adapter.
"""

from __future__ import annotations

import errno
import hashlib
import posixpath

from application.ports import (
    FileIdentity,
    FileSystem,
    PathFlavour,
    ReadFailure,
    StableDigest,
    StableRead,
    StableReadError,
)
from tests.fakes.fake_tree import FakeDir, FakeFile, FakeLink, FakeTree, is_under, parent_of


class InMemoryFileSystem(FakeTree):
    """A POSIX file system in memory. Paths are absolute and normalised (``/a/b``)."""

    @property
    def flavour(self) -> PathFlavour:
        return self.FLAVOUR

    def read_stable(self, path: str, *, max_bytes: int) -> StableRead:
        self._enter("read_stable", path)
        node = self._regular_file(path)
        if len(node.data) > max_bytes:
            self._refuse_size(path, node, ReadFailure.TOO_LARGE, f"at most {max_bytes} allowed")
        self.bytes_read += len(node.data)
        return StableRead(
            path=path,
            data=node.data,
            identity=self._identity(node),
            sha256=hashlib.sha256(node.data).hexdigest(),
        )

    def digest_stable(self, path: str, *, expected_size: int | None = None) -> StableDigest:
        self._enter("digest_stable", path)
        node = self._regular_file(path)
        if expected_size is not None and len(node.data) != expected_size:
            self._refuse_size(
                path, node, ReadFailure.SIZE_MISMATCH, f"{expected_size} expected; nothing was read"
            )
        self.bytes_read += len(node.data)
        return StableDigest(
            path=path,
            size=len(node.data),
            sha256=hashlib.sha256(node.data).hexdigest(),
            identity=self._identity(node),
        )

    def make_dir_exclusive(self, path: str, mode: int) -> None:
        self._enter("make_dir_exclusive", path, mode=mode)
        self._require_absolute(path)
        self._refuse_existing(path)
        self._require_parent_dir(path)
        self.nodes[path] = FakeDir(mode=mode, inode=self._next_inode())

    def ensure_dir(self, path: str, mode: int) -> None:
        self._enter("ensure_dir", path, mode=mode)
        self._require_absolute(path)
        node = self.nodes.get(path)
        if isinstance(node, FakeDir):
            return
        if node is not None:
            raise FileExistsError(errno.EEXIST, "exists and is not a directory", path)
        self.add_dir(path, mode)

    def create_file_exclusive(self, path: str, data: bytes, mode: int) -> None:
        self._enter("create_file_exclusive", path, mode=mode)
        self._require_absolute(path)
        self._refuse_existing(path)
        self._require_parent_dir(path)
        self.nodes[path] = self._new_file(data, mode)

    def write_atomic(self, path: str, data: bytes) -> None:
        self._enter("write_atomic", path)
        self._require_absolute(path)
        self._require_parent_dir(path)
        if isinstance(self.nodes.get(path), FakeDir):
            raise IsADirectoryError(errno.EISDIR, "is a directory", path)
        self.nodes[path] = self._new_file(data, 0o600)

    def fsync_dir(self, path: str) -> None:
        self._enter("fsync_dir", path)
        self._require_absolute(path)
        self._require_dir(path)

    def remove_temporaries(self, path: str) -> int:
        self._enter("remove_temporaries", path)
        self._require_absolute(path)
        directory, name = posixpath.split(path)
        prefix = f".{name}.tmp."
        left = [
            p
            for p, node in self.nodes.items()
            if posixpath.dirname(p) == directory
            and posixpath.basename(p).startswith(prefix)
            and not isinstance(node, FakeDir)
        ]
        for temporary in left:
            del self.nodes[temporary]
        return len(left)

    def rename_no_replace(self, source: str, target: str) -> None:
        self._enter("rename_no_replace", source, target)
        self._require_absolute(source)
        self._require_absolute(target)
        if source not in self.nodes:
            raise FileNotFoundError(errno.ENOENT, "no such file or directory", source)
        self._refuse_existing(target)
        self._require_parent_dir(target)
        moved = {path: node for path, node in self.nodes.items() if is_under(path, source)}
        for path in moved:
            del self.nodes[path]
        for path, node in moved.items():
            self.nodes[target + path[len(source) :]] = node

    def mark_read_only(self, path: str) -> None:
        self._enter("mark_read_only", path)
        self._require_absolute(path)
        node = self.nodes.get(path)
        if node is None:
            raise FileNotFoundError(errno.ENOENT, "no such file or directory", path)
        if isinstance(node, FakeLink):
            raise OSError(errno.ELOOP, "refusing to follow a symlink", path)
        node.mode = 0o400

    def list_dir(self, path: str) -> list[str]:
        self._enter("list_dir", path)
        self._require_absolute(path)
        self._require_dir(path)
        return self.children(path)

    def is_dir(self, path: str) -> bool:
        self._enter("is_dir", path)
        self._require_absolute(path)
        return isinstance(self.nodes.get(path), FakeDir)

    def exists(self, path: str) -> bool:
        self._enter("exists", path)
        self._require_absolute(path)
        return path in self.nodes

    def regular_file(self, path: str) -> FileIdentity:
        self._enter("regular_file", path)
        return self._identity(self._regular_file(path))

    def reclaim_access(self, path: str, mode: int) -> bool:
        self._enter("reclaim_access", path)
        self._require_absolute(path)
        node = self.nodes.get(path)
        if isinstance(node, FakeLink) or node is None or node.mode & mode == mode:
            return False
        node.mode |= mode
        if isinstance(node, FakeFile):
            node.ctime_ns = self._tick()  # a chmod is a change, as on a real file system
        return True

    def read_small(self, path: str, max_bytes: int) -> bytes:
        self._enter("read_small", path)
        node = self._regular_file(path)
        if len(node.data) > max_bytes:
            raise StableReadError(
                ReadFailure.TOO_LARGE, path, "state file too large", size=len(node.data)
            )
        self.bytes_read += len(node.data)
        return node.data

    def identity(self, path: str) -> FileIdentity | None:
        self._enter("identity", path)
        self._require_absolute(path)
        node = self.nodes.get(path)
        if node is None:
            return None
        if isinstance(node, FakeFile):
            return self._identity(node)
        return FileIdentity(device=1, inode=node.inode, size=0, mtime_ns=0, ctime_ns=0)

    def clock_reading(self, path: str) -> FileIdentity | None:
        self._enter("clock_reading", path)
        self._require_absolute(path)
        if not self.change_clock or not isinstance(self.nodes.get(parent_of(path)), FakeDir):
            return None
        node = self.nodes.get(path)
        if node is None:
            node = self.nodes[path] = self._new_file(b"", 0o600)
        elif isinstance(node, FakeFile):
            node.mtime_ns = node.ctime_ns = self._tick()
        else:
            return None
        return self._identity(node)

    def append_bytes(self, path: str, data: bytes) -> None:
        self._enter("append_bytes", path)
        self._require_absolute(path)
        node = self.nodes.get(path)
        if node is None:
            self._require_parent_dir(path)
            self.nodes[path] = self._new_file(data, 0o600)
            return
        if not isinstance(node, FakeFile):
            raise OSError(errno.ELOOP if isinstance(node, FakeLink) else errno.EISDIR, "", path)
        if node.data and not node.data.endswith(b"\n"):
            node.data += b"\n"  # as the adapters: a torn last line is ended first
        node.data += data
        node.mtime_ns = node.ctime_ns = self._tick()

    def remove_file(self, path: str) -> None:
        self._enter("remove_file", path)
        self._require_absolute(path)
        node = self.nodes.get(path)
        if isinstance(node, FakeDir):
            raise IsADirectoryError(errno.EISDIR, "is a directory", path)
        self.nodes.pop(path, None)

    def remove_tree(self, path: str) -> None:
        self._enter("remove_tree", path)
        self._require_absolute(path)
        node = self.nodes.get(path)
        if node is None:
            return
        if isinstance(node, FakeLink):
            raise OSError(errno.ELOOP, "cannot remove a tree through a symbolic link", path)
        if isinstance(node, FakeFile):
            raise NotADirectoryError(errno.ENOTDIR, "not a directory", path)
        # Links inside the tree are entries of their own: deleting them never reaches targets.
        for inside in [p for p in self.nodes if is_under(p, path)]:
            del self.nodes[inside]


_memory_conforms: type[FileSystem] = InMemoryFileSystem
