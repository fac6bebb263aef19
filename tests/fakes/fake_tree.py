"""The tree behind ``InMemoryFileSystem``: its nodes, the record of calls through the port, the
actions a test arranges before the ``n``-th call of an operation, and the checks every port
method shares (absolute paths, refusals of existing or missing entries, regular files only).

Only calls through the port are recorded; the helpers a test uses to build or inspect the tree
(``add_file``, ``read``, ``tree`` ...) are not.
"""

from __future__ import annotations

import errno
import posixpath
from collections import Counter
from collections.abc import Callable
from typing import ClassVar, NoReturn

import attrs

from application.ports import FileIdentity, PathFlavour, ReadFailure, StableReadError
from domain.paths import absolute_path_problem


@attrs.frozen
class FsCall:
    """One call through the port: the method name, the path(s) it was given and, when known,
    the exception it raised (its type name)."""

    operation: str
    path: str
    target: str | None = None
    raised: str | None = None
    mode: int | None = None


@attrs.define
class FakeFile:
    data: bytes
    mode: int
    inode: int
    mtime_ns: int
    ctime_ns: int


@attrs.define
class FakeDir:
    mode: int
    inode: int


@attrs.define
class FakeLink:
    target: str
    inode: int


FakeNode = FakeFile | FakeDir | FakeLink
Action = Callable[[], None]


def parent_of(path: str) -> str:
    return posixpath.dirname(path)


def is_under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


class FakeTree:
    """A POSIX tree in a dict: paths are absolute and normalised (``/a/b``)."""

    FLAVOUR: ClassVar[PathFlavour] = "posix"

    def __init__(self) -> None:
        self._inodes = 0
        self._ticks = 0
        self.nodes: dict[str, FakeNode] = {"/": FakeDir(mode=0o755, inode=self._next_inode())}
        self.calls: list[FsCall] = []
        # File content bytes handed out by the reads (read_stable, read_small, digest_stable).
        self.bytes_read = 0
        self._counts: Counter[str] = Counter()
        self._actions: dict[tuple[str, int], list[Action]] = {}
        # Whether ``clock_reading`` reads a change clock (a real POSIX file system does); off,
        # it answers ``None`` as Windows does, and callers fall back to the wall clock.
        self.change_clock = False

    # ---- what a test arranges ---------------------------------------------------------------

    def before(self, operation: str, action: Action, *, call: int = 1) -> None:
        """Run ``action`` just before the ``call``-th call of ``operation`` (1-based)."""
        self._actions.setdefault((operation, call), []).append(action)

    def fail(self, operation: str, *, call: int = 1, error: BaseException | None = None) -> None:
        """Make the ``call``-th call of ``operation`` raise (``OSError(EIO)`` by default)."""
        failure = error if error is not None else OSError(errno.EIO, "injected fault", operation)

        def raise_it() -> None:
            raise failure

        self.before(operation, raise_it, call=call)

    def add_dir(self, path: str, mode: int = 0o755) -> str:
        """Create ``path`` and any missing parents (unrecorded)."""
        self._require_absolute(path)
        missing: list[str] = []
        current = path
        while current not in self.nodes:
            missing.append(current)
            current = parent_of(current)
        if not isinstance(self.nodes[current], FakeDir):
            raise NotADirectoryError(errno.ENOTDIR, "not a directory", current)
        for directory in reversed(missing):
            self.nodes[directory] = FakeDir(mode=mode, inode=self._next_inode())
        return path

    def add_file(self, path: str, data: bytes, mode: int = 0o644) -> str:
        self.add_dir(parent_of(path))
        self.nodes[path] = self._new_file(data, mode)
        return path

    def advance_clock(self, milliseconds: int) -> None:
        """Let the clock that stamps every change run on (each change is 1 ms after the last)."""
        self._ticks += milliseconds

    def add_symlink(self, path: str, target: str) -> str:
        self.add_dir(parent_of(path))
        self.nodes[path] = FakeLink(target=target, inode=self._next_inode())
        return path

    # ---- what a test inspects -----------------------------------------------------------------

    def read(self, path: str) -> bytes:
        node = self.nodes[path]
        assert isinstance(node, FakeFile), f"{path} is not a file"
        return node.data

    def mode(self, path: str) -> int:
        node = self.nodes[path]
        assert not isinstance(node, FakeLink), f"{path} is a symlink"
        return node.mode

    def children(self, path: str) -> list[str]:
        return sorted(
            name.rsplit("/", 1)[-1]
            for name in self.nodes
            if name != "/" and parent_of(name) == path
        )

    def tree(self, under: str = "/") -> dict[str, bytes | None]:
        """Every path below ``under``: file bytes, or ``None`` for directories and links."""
        return {
            path: node.data if isinstance(node, FakeFile) else None
            for path, node in sorted(self.nodes.items())
            if is_under(path, under) and path != under
        }

    def operations(self) -> list[str]:
        return [call.operation for call in self.calls]

    def calls_of(self, operation: str) -> list[FsCall]:
        return [call for call in self.calls if call.operation == operation]

    # ---- internals --------------------------------------------------------------------------

    def _enter(
        self, operation: str, path: str, target: str | None = None, *, mode: int | None = None
    ) -> None:
        self.calls.append(FsCall(operation, path, target, mode=mode))
        self._counts[operation] += 1
        for action in self._actions.pop((operation, self._counts[operation]), []):
            action()

    def _next_inode(self) -> int:
        self._inodes += 1
        return self._inodes

    def _tick(self) -> int:
        self._ticks += 1
        return self._ticks * 1_000_000

    def _new_file(self, data: bytes, mode: int) -> FakeFile:
        now = self._tick()
        return FakeFile(data=data, mode=mode, inode=self._next_inode(), mtime_ns=now, ctime_ns=now)

    def _identity(self, node: FakeFile) -> FileIdentity:
        return FileIdentity(
            device=1,
            inode=node.inode,
            size=len(node.data),
            mtime_ns=node.mtime_ns,
            ctime_ns=node.ctime_ns,
        )

    def _require_absolute(self, path: str) -> None:
        problem = absolute_path_problem(path, self.FLAVOUR)
        if problem is not None or posixpath.normpath(path) != path:
            raise ValueError(f"not a normalised absolute posix path: {problem or path}")

    def _refuse_existing(self, path: str) -> None:
        if path in self.nodes:
            raise FileExistsError(errno.EEXIST, "file exists", path)

    def _require_dir(self, path: str) -> None:
        node = self.nodes.get(path)
        if node is None:
            raise FileNotFoundError(errno.ENOENT, "no such file or directory", path)
        if not isinstance(node, FakeDir):
            raise NotADirectoryError(errno.ENOTDIR, "not a directory", path)

    def _require_parent_dir(self, path: str) -> None:
        self._require_dir(parent_of(path))

    def _regular_file(self, path: str) -> FakeFile:
        problem = absolute_path_problem(path, self.FLAVOUR)
        if problem is not None:
            raise StableReadError(ReadFailure.INVALID_PATH, path, problem)
        node = self.nodes.get(path)
        if node is None:
            raise StableReadError(ReadFailure.MISSING, path, "no such file")
        if isinstance(node, FakeLink):
            raise StableReadError(
                ReadFailure.SYMLINK, path, "the final component is a symbolic link"
            )
        if isinstance(node, FakeDir):
            raise StableReadError(ReadFailure.NOT_REGULAR, path, "it is a directory")
        return node

    @staticmethod
    def _refuse_size(path: str, node: FakeFile, failure: ReadFailure, limit: str) -> NoReturn:
        """The refusal of a stable read or digest whose file has the wrong size, as the real file
        system words it: the size first, then the limit it broke."""
        size = len(node.data)
        raise StableReadError(failure, path, f"{size} bytes, {limit}", size=size)
