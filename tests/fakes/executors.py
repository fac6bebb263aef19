"""An ``Executor`` that runs each call at once, in the submitting thread.

For worlds that must not see two threads at once (pyfakefs is not thread-safe): a role that
runs work alongside (a spec child's fresh canonical read at ``message_end``) then runs it in
turn, with the same results and errors through the returned ``Future``.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import ParamSpec, TypeVar

_P = ParamSpec("_P")
_T = TypeVar("_T")


class InlineExecutor(Executor):
    def __init__(self) -> None:
        self.submitted = 0

    def submit(self, fn: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> Future[_T]:
        self.submitted += 1
        future: Future[_T] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # handed to the caller through the future, like a pool
            future.set_exception(exc)
        return future
