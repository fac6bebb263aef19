"""Chunk reads begun at Pi's preflight of the call that will execute them (contract §7, §8).

Pi preflights every tool call (the ``tool_call`` event, where the guard decides) before it
executes it, and awaits the guard's answer in between. A reader call the guard allows is
certain to be executed next with the same arguments, so the fresh canonical read it needs (the
whole-file length and SHA-256 check, then the chunk's rendering) starts right after that
decision, on a worker thread, and runs while the answer travels to Pi and the execution request
travels back. The execution then takes the result that read produced, or its failure.

Nothing is trusted earlier than before: each read is taken after the preflight of the one call
it serves and is used by that call's execution only, never by another call nor a second time;
an execution that finds none (no preflight, another index, dropped for the bound below) reads
for itself. The delivery is still proved by the commit's own fresh read after ``message_end``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

_Read = TypeVar("_Read")

# Two workers: Pi's parallel reads of one message hash on both cores, while the bridge's own
# threads keep answering.
_WORKERS = 2
# Reads begun but not yet executed: a preflight whose execution never comes (another hook
# blocked the call, Pi stopped) leaves one behind; the oldest goes beyond this bound.
_MAX_WAITING = 64


class PreparedReads(Generic[_Read]):
    """Reads begun per tool call id; thread-safe. ``read(index)`` is the whole read."""

    def __init__(self, read: Callable[[int], _Read]) -> None:
        self._read = read
        self._guard = threading.Lock()
        self._begun: dict[str, tuple[int, Future[_Read]]] = {}
        self._executor: ThreadPoolExecutor | None = None

    def begin(self, tool_call_id: str, index: int) -> None:
        """Start the read the execution of ``tool_call_id`` will take (its preflight allowed
        it). A second preflight of the same call starts a new read, replacing the first."""
        with self._guard:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    max_workers=_WORKERS, thread_name_prefix="pi-squad-chunk-read"
                )
            replaced = self._begun.pop(tool_call_id, None)
            if replaced is None and len(self._begun) >= _MAX_WAITING:
                replaced = self._begun.pop(next(iter(self._begun)))
            self._begun[tool_call_id] = (index, self._executor.submit(self._read, index))
        if replaced is not None:
            replaced[1].cancel()

    def take(self, tool_call_id: str, index: int) -> _Read | None:
        """What the read begun for ``tool_call_id`` produced, once done (its failure is raised
        here); ``None`` when none was begun for this call and ``index``: the caller reads."""
        with self._guard:
            begun = self._begun.pop(tool_call_id, None)
        if begun is None:
            return None
        begun_index, future = begun
        if begun_index != index:
            future.cancel()
            return None
        return future.result()

    def waiting(self) -> int:
        with self._guard:
            return len(self._begun)
