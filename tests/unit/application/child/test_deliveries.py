"""``DeliveryQueue``: a spec child's deliveries, committed in groups when they must count."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from application.child.deliveries import DeliveriesUnsettled, DeliveryQueue


class Committer:
    """Records each group; fails the groups holding a value listed in ``failing``."""

    def __init__(self, failing: Sequence[str] = ()) -> None:
        self.groups: list[list[str]] = []
        self.failing = set(failing)

    def __call__(self, group: Sequence[str]) -> None:
        self.groups.append(list(group))
        if self.failing & set(group):
            raise LookupError(f"group {list(group)} refused")


def test_deliveries_are_committed_only_when_settled_and_as_one_group() -> None:
    committer = Committer()
    queue: DeliveryQueue[str] = DeliveryQueue(committer)
    queue.put("a")
    queue.put("b")
    assert committer.groups == []
    assert queue.unsettled == 2
    queue.settle(5)
    assert committer.groups == [["a", "b"]]
    assert queue.unsettled == 0
    queue.settle(5)  # nothing received since: no empty group
    assert committer.groups == [["a", "b"]]


class HeldCommitter:
    """Records each group; holds the first until ``release`` is set."""

    def __init__(self) -> None:
        self.groups: list[list[str]] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, group: Sequence[str]) -> None:
        self.groups.append(list(group))
        if len(self.groups) == 1:
            self.entered.set()
            assert self.release.wait(30)  # a hang guard only


def settling_in_the_background(
    queue: DeliveryQueue[str], committer: HeldCommitter
) -> threading.Thread:
    """A settle whose group (``"a"``) is being committed, held, on another thread."""
    queue.put("a")
    holder = threading.Thread(target=queue.settle, args=(30,))
    holder.start()
    assert committer.entered.wait(30)
    return holder


def test_a_settle_waits_for_a_group_being_committed_then_commits_what_is_left() -> None:
    committer = HeldCommitter()
    queue: DeliveryQueue[str] = DeliveryQueue(committer)
    holder = settling_in_the_background(queue, committer)
    queue.put("b")
    second_done = threading.Event()

    def second() -> None:
        queue.settle(30)
        second_done.set()

    threading.Thread(target=second).start()
    assert not second_done.wait(0.1)  # "b" waits for the group holding "a"
    committer.release.set()
    holder.join(30)
    assert second_done.wait(30)
    assert committer.groups == [["a"], ["b"]]
    assert queue.unsettled == 0


def test_a_failed_group_is_raised_once_by_a_reporting_settle_and_later_groups_still_commit() -> (
    None
):
    committer = Committer(failing=["bad"])
    queue: DeliveryQueue[str] = DeliveryQueue(committer)
    queue.put("bad")
    queue.settle(5, report=False)  # the guard's and the bootstrap's wait
    assert queue.unsettled == 0
    with pytest.raises(LookupError, match="refused"):
        queue.settle(5)  # Pi's context event: the shim logs it
    queue.put("good")
    queue.settle(5)  # the failure was reported once
    assert committer.groups == [["bad"], ["good"]]


def test_a_settle_that_cannot_start_in_time_says_how_many_wait() -> None:
    committer = HeldCommitter()
    queue: DeliveryQueue[str] = DeliveryQueue(committer)
    holder = settling_in_the_background(queue, committer)
    queue.put("b")
    queue.put("c")
    with pytest.raises(DeliveriesUnsettled, match=r"^2 deliveries .* after 0\.05 s"):
        queue.settle(0.05)
    committer.release.set()
    holder.join(30)
    queue.settle(30)
    assert queue.unsettled == 0
    assert committer.groups == [["a"], ["b", "c"]]


def test_later_failures_are_noted_on_the_one_reported() -> None:
    committer = Committer(failing=["bad-1", "bad-2"])
    queue: DeliveryQueue[str] = DeliveryQueue(committer)
    queue.put("bad-1")
    queue.settle(5, report=False)
    queue.put("bad-2")
    queue.settle(5, report=False)
    with pytest.raises(LookupError, match=r"\['bad-1'\] refused") as raised:
        queue.settle(5)
    assert raised.value.__notes__ == [
        "1 later group(s) failed too: LookupError: group ['bad-2'] refused"
    ]
