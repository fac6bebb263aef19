"""Typed, recording fakes of the ``FileSystem`` port.

* ``InMemoryFileSystem``: a POSIX-flavoured tree in a dict. It implements every port method
  with the documented refusals (exclusive creation, no-replace rename, symlinks never followed
  by reads, ``is_dir`` or ``remove_tree``), records each call, and lets a test run an action
  just before the ``n``-th call of an operation: raise an error there, or change the tree the
  way a concurrent process would.
* ``RecordingFileSystem``: wraps any ``FileSystem`` (the real adapters included) and records
  each call before delegating. The crash tests use it to learn the publication steps.
* ``FaultingFileSystem``: a ``RecordingFileSystem`` that acts on one ``FaultPoint``: SIGKILL
  before or after the ``n``-th call of one method, or ``OSError(EIO)`` instead of it. The crash
  tests run the real CLI with it (``tests/support/fault_cli.py``).

Only calls through the port are recorded; the helpers a test uses to build or inspect the tree
(``add_file``, ``read``, ``tree`` ...) are not.
"""

from __future__ import annotations

import errno
import hashlib
import os
import posixpath
import signal
import threading
from collections import Counter
from collections.abc import Callable
from typing import ClassVar, Literal, NoReturn, TypeVar

import attrs

from application.ports import (
    FileIdentity,
    FileSystem,
    PathFlavour,
    ReadFailure,
    StableDigest,
    StableRead,
    StableReadError,
)
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
_T = TypeVar("_T")


def _parent(path: str) -> str:
    return posixpath.dirname(path)


def _is_under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


class InMemoryFileSystem:
    """A POSIX file system in memory. Paths are absolute and normalised (``/a/b``)."""

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
            current = _parent(current)
        if not isinstance(self.nodes[current], FakeDir):
            raise NotADirectoryError(errno.ENOTDIR, "not a directory", current)
        for directory in reversed(missing):
            self.nodes[directory] = FakeDir(mode=mode, inode=self._next_inode())
        return path

    def add_file(self, path: str, data: bytes, mode: int = 0o644) -> str:
        self.add_dir(_parent(path))
        self.nodes[path] = self._new_file(data, mode)
        return path

    def advance_clock(self, milliseconds: int) -> None:
        """Let the clock that stamps every change run on (each change is 1 ms after the last)."""
        self._ticks += milliseconds

    def add_symlink(self, path: str, target: str) -> str:
        self.add_dir(_parent(path))
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
            name.rsplit("/", 1)[-1] for name in self.nodes if name != "/" and _parent(name) == path
        )

    def tree(self, under: str = "/") -> dict[str, bytes | None]:
        """Every path below ``under``: file bytes, or ``None`` for directories and links."""
        return {
            path: node.data if isinstance(node, FakeFile) else None
            for path, node in sorted(self.nodes.items())
            if _is_under(path, under) and path != under
        }

    def operations(self) -> list[str]:
        return [call.operation for call in self.calls]

    def calls_of(self, operation: str) -> list[FsCall]:
        return [call for call in self.calls if call.operation == operation]

    # ---- FileSystem -------------------------------------------------------------------------

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
        moved = {path: node for path, node in self.nodes.items() if _is_under(path, source)}
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
        if not self.change_clock or not isinstance(self.nodes.get(_parent(path)), FakeDir):
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
        for inside in [p for p in self.nodes if _is_under(p, path)]:
            del self.nodes[inside]

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
        self._require_dir(_parent(path))

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


class RecordingFileSystem:
    """Delegates every port call to ``inner`` and records it, with the exception it raised."""

    def __init__(self, inner: FileSystem) -> None:
        self.inner = inner
        self.calls: list[FsCall] = []

    def steps(self) -> list[tuple[str, int]]:
        """Each call as ``(operation, n)``: the ``n``-th call of that operation (1-based), the
        numbering a ``FaultPoint`` uses."""
        seen: Counter[str] = Counter()
        numbered: list[tuple[str, int]] = []
        for call in self.calls:
            seen[call.operation] += 1
            numbered.append((call.operation, seen[call.operation]))
        return numbered

    def failed_steps(self) -> set[tuple[str, int]]:
        """The steps whose call raised (a missing directory listed, say)."""
        return {step for step, call in zip(self.steps(), self.calls, strict=True) if call.raised}

    def _call(
        self, operation: str, path: str, run: Callable[[], _T], target: str | None = None
    ) -> _T:
        try:
            result = run()
        except BaseException as exc:
            self.calls.append(FsCall(operation, path, target, raised=type(exc).__name__))
            raise
        self.calls.append(FsCall(operation, path, target))
        return result

    @property
    def flavour(self) -> PathFlavour:
        return self.inner.flavour

    def read_stable(self, path: str, *, max_bytes: int) -> StableRead:
        return self._call(
            "read_stable", path, lambda: self.inner.read_stable(path, max_bytes=max_bytes)
        )

    def digest_stable(self, path: str, *, expected_size: int | None = None) -> StableDigest:
        return self._call(
            "digest_stable",
            path,
            lambda: self.inner.digest_stable(path, expected_size=expected_size),
        )

    def make_dir_exclusive(self, path: str, mode: int) -> None:
        self._call("make_dir_exclusive", path, lambda: self.inner.make_dir_exclusive(path, mode))

    def ensure_dir(self, path: str, mode: int) -> None:
        self._call("ensure_dir", path, lambda: self.inner.ensure_dir(path, mode))

    def create_file_exclusive(self, path: str, data: bytes, mode: int) -> None:
        self._call(
            "create_file_exclusive",
            path,
            lambda: self.inner.create_file_exclusive(path, data, mode),
        )

    def write_atomic(self, path: str, data: bytes) -> None:
        self._call("write_atomic", path, lambda: self.inner.write_atomic(path, data))

    def fsync_dir(self, path: str) -> None:
        self._call("fsync_dir", path, lambda: self.inner.fsync_dir(path))

    def remove_temporaries(self, path: str) -> int:
        return self._call("remove_temporaries", path, lambda: self.inner.remove_temporaries(path))

    def rename_no_replace(self, source: str, target: str) -> None:
        self._call(
            "rename_no_replace",
            source,
            lambda: self.inner.rename_no_replace(source, target),
            target=target,
        )

    def mark_read_only(self, path: str) -> None:
        self._call("mark_read_only", path, lambda: self.inner.mark_read_only(path))

    def list_dir(self, path: str) -> list[str]:
        return self._call("list_dir", path, lambda: self.inner.list_dir(path))

    def is_dir(self, path: str) -> bool:
        return self._call("is_dir", path, lambda: self.inner.is_dir(path))

    def exists(self, path: str) -> bool:
        return self._call("exists", path, lambda: self.inner.exists(path))

    def read_small(self, path: str, max_bytes: int) -> bytes:
        return self._call("read_small", path, lambda: self.inner.read_small(path, max_bytes))

    def regular_file(self, path: str) -> FileIdentity:
        return self._call("regular_file", path, lambda: self.inner.regular_file(path))

    def reclaim_access(self, path: str, mode: int) -> bool:
        return self._call("reclaim_access", path, lambda: self.inner.reclaim_access(path, mode))

    def identity(self, path: str) -> FileIdentity | None:
        return self._call("identity", path, lambda: self.inner.identity(path))

    def clock_reading(self, path: str) -> FileIdentity | None:
        return self._call("clock_reading", path, lambda: self.inner.clock_reading(path))

    def append_bytes(self, path: str, data: bytes) -> None:
        self._call("append_bytes", path, lambda: self.inner.append_bytes(path, data))

    def remove_file(self, path: str) -> None:
        self._call("remove_file", path, lambda: self.inner.remove_file(path))

    def remove_tree(self, path: str) -> None:
        self._call("remove_tree", path, lambda: self.inner.remove_tree(path))


FaultAction = Literal["kill", "kill-after", "oserror"]
_FAULT_ACTIONS: dict[str, FaultAction] = {
    "kill": "kill",
    "kill-after": "kill-after",
    "oserror": "oserror",
}
# Every FileSystem method can be targeted, so a crash test can stop at any step it names.
FAULTABLE_OPERATIONS: frozenset[str] = frozenset(
    {
        "read_stable",
        "digest_stable",
        "make_dir_exclusive",
        "ensure_dir",
        "create_file_exclusive",
        "write_atomic",
        "fsync_dir",
        "remove_temporaries",
        "rename_no_replace",
        "mark_read_only",
        "list_dir",
        "is_dir",
        "exists",
        "read_small",
        "regular_file",
        "reclaim_access",
        "remove_tree",
        "identity",
        "clock_reading",
        "append_bytes",
        "remove_file",
    }
)


@attrs.frozen
class FaultPoint:
    """``<operation>:<n>:<action>``: act on the ``n``-th call (1-based) of ``operation``."""

    operation: str
    call_number: int
    action: FaultAction

    def __str__(self) -> str:
        return f"{self.operation}:{self.call_number}:{self.action}"

    @classmethod
    def parse(cls, text: str) -> FaultPoint:
        # A malformed fault point is an error, never ignored: a crash test that silently ran
        # without its crash would pass for the wrong reason.
        parts = text.split(":")
        if len(parts) != 3:
            raise ValueError("a fault point must be <operation>:<n>:<action>")
        operation, number, action = parts
        if operation not in FAULTABLE_OPERATIONS:
            raise ValueError(f"fault point: unknown operation {operation!r}")
        if not number.isdecimal() or int(number) < 1:
            raise ValueError("fault point: call number must be an integer >= 1")
        if action not in _FAULT_ACTIONS:
            raise ValueError(f"fault point: action must be one of {sorted(_FAULT_ACTIONS)}")
        return cls(operation, int(number), _FAULT_ACTIONS[action])


def _kill_self() -> None:
    # SIGKILL cannot be caught, so no finally block or atexit handler tidies up: exactly the
    # state a power cut or OOM kill leaves. Windows has no SIGKILL; os.kill there terminates.
    kill_signal: int = getattr(signal, "SIGKILL", signal.SIGTERM)
    os.kill(os.getpid(), kill_signal)
    os._exit(137)  # only reached where the signal is delivered asynchronously


class FaultingFileSystem(RecordingFileSystem):
    """Records every call like ``RecordingFileSystem`` and fires ``point`` on its call:
    ``kill`` sends SIGKILL to this process before the operation, ``kill-after`` after it
    succeeded, ``oserror`` raises ``OSError(EIO)`` instead of it (for the read methods too, so
    a test sees a raw I/O failure). Only calls through the port count: what a method does
    inside the wrapped adapter (``write_atomic`` syncing its directory) is not a step."""

    def __init__(self, inner: FileSystem, point: FaultPoint) -> None:
        super().__init__(inner)
        self.point = point
        self._counted = 0
        self._lock = threading.Lock()

    def _call(
        self, operation: str, path: str, run: Callable[[], _T], target: str | None = None
    ) -> _T:
        armed = False
        if operation == self.point.operation:
            with self._lock:
                self._counted += 1
                armed = self._counted == self.point.call_number
        if armed and self.point.action == "kill":
            _kill_self()
        if armed and self.point.action == "oserror":
            self.calls.append(FsCall(operation, path, target, raised=OSError.__name__))
            raise OSError(errno.EIO, "injected fault", operation)
        result = super()._call(operation, path, run, target)
        if armed and self.point.action == "kill-after":
            _kill_self()
        return result


_memory_conforms: type[FileSystem] = InMemoryFileSystem
_recording_conforms: type[FileSystem] = RecordingFileSystem
_faulting_conforms: type[FileSystem] = FaultingFileSystem
