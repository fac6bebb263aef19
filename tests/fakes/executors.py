"""An ``Executor`` that runs each call in the thread that asks for its result, when it asks.

For worlds that must not see two threads at once (pyfakefs is not thread-safe): work a role
hands to a helper thread (a spec child's group commits of the deliveries it received) then
runs in the thread that settles it (``context``, the guard), with the same results and errors
through the returned ``Future``, and nothing runs before it is asked for.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, TypeVar

_T = TypeVar("_T")


class _Deferred(Future[_T]):
    def __init__(self, run: Callable[[], _T]) -> None:
        super().__init__()
        self._run: Callable[[], _T] | None = run
        self._turn = threading.Lock()

    def _settle(self) -> None:
        with self._turn:
            run, self._run = self._run, None
            if run is None:
                return
            try:
                self.set_result(run())
            except BaseException as exc:  # handed to the caller through the future, like a pool
                self.set_exception(exc)

    def result(self, timeout: float | None = None) -> _T:
        self._settle()
        return super().result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._settle()
        return super().exception(timeout)


class DeferredExecutor(Executor):
    def __init__(self) -> None:
        self.submitted = 0

    def submit(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> Future[_T]:
        self.submitted += 1
        return _Deferred(lambda: fn(*args, **kwargs))
