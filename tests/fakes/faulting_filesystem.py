"""Wrappers of any ``FileSystem`` (the real adapters included) for the crash tests.

* ``RecordingFileSystem`` records each call before delegating; the crash tests use it to learn
  the publication steps.
* ``FaultingFileSystem``: a ``RecordingFileSystem`` that acts on one ``FaultPoint``: SIGKILL
  before or after the ``n``-th call of one method, or ``OSError(EIO)`` instead of it. The crash
  tests run the real CLI with it (``tests/support/fault_cli.py``).
"""

from __future__ import annotations

import errno
import os
import signal
import threading
from collections import Counter
from collections.abc import Callable
from typing import Literal, TypeVar

import attrs

from application.ports import FileIdentity, FileSystem, PathFlavour, StableDigest, StableRead
from tests.fakes.fake_tree import FsCall

_T = TypeVar("_T")


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


_recording_conforms: type[FileSystem] = RecordingFileSystem
_faulting_conforms: type[FileSystem] = FaultingFileSystem
