"""``DeliveryQueue``: a spec child's deliveries committed in groups behind Pi's back."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any, TypeVar

import pytest

from application.child.deliveries import DeliveriesUnsettled, DeliveryQueue
from tests.fakes.executors import DeferredExecutor

_T = TypeVar("_T")


class Committer:
    """Records each group; fails the groups holding a value listed in ``failing``."""

    def __init__(self, failing: Sequence[str] = ()) -> None:
        self.groups: list[list[str]] = []
        self.failing = set(failing)

    def __call__(self, group: Sequence[str]) -> None:
        self.groups.append(list(group))
        if self.failing & set(group):
            raise LookupError(f"group {list(group)} refused")


def test_nothing_is_committed_before_a_settle_asks_on_a_deferred_executor() -> None:
    committer = Committer()
    queue: DeliveryQueue[str] = DeliveryQueue(committer, DeferredExecutor())
    queue.put("a")
    queue.put("b")
    assert committer.groups == []
    assert queue.unsettled == 2
    queue.settle(5)
    assert committer.groups == [["a", "b"]]
    assert queue.unsettled == 0


def test_deliveries_received_while_a_group_commits_form_the_next_group() -> None:
    entered, release = threading.Event(), threading.Event()
    groups: list[list[str]] = []

    def commit(group: Sequence[str]) -> None:
        groups.append(list(group))
        entered.set()
        assert release.wait(30)  # a hang guard only

    with ThreadPoolExecutor(max_workers=1) as pool:
        queue: DeliveryQueue[str] = DeliveryQueue(commit, pool)
        queue.put("a")
        assert entered.wait(30)
        queue.put("b")
        queue.put("c")
        assert queue.unsettled == 3
        release.set()
        queue.settle(30)
        assert queue.unsettled == 0
        assert groups == [["a"], ["b", "c"]]


def test_a_failed_group_is_raised_once_by_the_next_settle_and_later_groups_still_commit() -> None:
    committer = Committer(failing=["bad"])
    queue: DeliveryQueue[str] = DeliveryQueue(committer, DeferredExecutor())
    queue.put("bad")
    with pytest.raises(LookupError, match="refused"):
        queue.settle(5)
    queue.put("good")
    queue.settle(5)  # the failure was reported once
    assert committer.groups == [["bad"], ["good"]]
    assert queue.unsettled == 0


def test_a_settle_that_runs_out_of_time_says_how_many_are_still_committing() -> None:
    release = threading.Event()

    def commit(group: Sequence[str]) -> None:
        assert release.wait(30)  # a hang guard only

    with ThreadPoolExecutor(max_workers=1) as pool:
        queue: DeliveryQueue[str] = DeliveryQueue(commit, pool)
        queue.put("a")
        queue.put("b")
        with pytest.raises(DeliveriesUnsettled, match=r"^2 deliveries .* after 0\.05 s"):
            queue.settle(0.05)
        release.set()
        queue.settle(30)
        assert queue.unsettled == 0


class InlineExecutor(Executor):
    """Runs each call at once, in ``submit``: the drain ends before ``put`` returns."""

    def submit(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> Future[_T]:
        future: Future[_T] = Future()
        future.set_result(fn(*args, **kwargs))
        return future


def test_a_drain_that_ran_inline_leaves_no_later_delivery_stranded() -> None:
    committer = Committer()
    queue: DeliveryQueue[str] = DeliveryQueue(committer, InlineExecutor())
    queue.put("a")
    queue.put("b")
    assert committer.groups == [["a"], ["b"]]
    queue.settle(5)
    assert queue.unsettled == 0


def test_a_settle_that_does_not_report_leaves_the_failure_for_one_that_does() -> None:
    committer = Committer(failing=["bad"])
    queue: DeliveryQueue[str] = DeliveryQueue(committer, DeferredExecutor())
    queue.put("bad")
    queue.settle(5, report=False)  # the guard's and the bootstrap's wait
    assert queue.unsettled == 0
    with pytest.raises(LookupError, match="refused"):
        queue.settle(5)  # Pi's context event: the shim logs it
    queue.settle(5)


def test_a_submit_that_fails_leaves_the_next_delivery_a_drain() -> None:
    class Refusing(Executor):
        refused = False

        def submit(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> Future[_T]:
            if not self.refused:
                self.refused = True
                raise RuntimeError("cannot schedule new futures after shutdown")
            return InlineExecutor().submit(fn, *args, **kwargs)

    committer = Committer()
    queue: DeliveryQueue[str] = DeliveryQueue(committer, Refusing())
    with pytest.raises(RuntimeError, match="shutdown"):
        queue.put("a")
    queue.put("b")
    assert committer.groups == [["a", "b"]]
    assert queue.unsettled == 0
