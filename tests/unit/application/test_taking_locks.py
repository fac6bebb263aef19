"""How every lock factory (the fake too) ends what it tried: a ``lock`` not taken in time is a
``LockTimeout`` naming the path and the bound, a taken one is held for the block; ``try_lock``
says whether it took the lock. A taken lock is released however the block ends."""

from __future__ import annotations

import threading

import pytest

from application.ports import LockTimeout, held_lock, tried_lock
from tests.fakes.locks import FakeLockFactory


def test_a_lock_not_taken_in_time_is_a_timeout_naming_its_path_and_bound() -> None:
    released: list[str] = []
    with (
        pytest.raises(LockTimeout, match=r"^lock /r/a\.lock not acquired within 0\.5 s$"),
        held_lock(False, lambda: released.append("x"), "/r/a.lock", 0.5),
    ):
        pytest.fail("the block ran without the lock")
    assert released == []


def test_a_taken_lock_is_held_for_its_block_and_released_when_the_block_raises() -> None:
    released: list[str] = []

    def block() -> None:
        with held_lock(True, lambda: released.append("x"), "/r/a.lock", 1):
            assert released == []
            raise KeyError("boom")

    with pytest.raises(KeyError):
        block()
    assert released == ["x"]


def test_the_fake_factory_times_out_while_another_thread_holds_the_lock() -> None:
    locks = FakeLockFactory()
    taken, done = threading.Event(), threading.Event()

    def hold() -> None:
        with locks.lock("/r/a.lock"):
            taken.set()
            done.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert taken.wait(5)
        with pytest.raises(LockTimeout), locks.lock("/r/a.lock", timeout=0.01):
            pytest.fail("taken twice")
    finally:
        done.set()
        holder.join()
    with locks.lock("/r/a.lock", timeout=0.01):
        assert locks.acquired == ["/r/a.lock", "/r/a.lock"]


def test_a_lock_try_lock_took_is_released_after_its_block() -> None:
    released: list[str] = []
    with tried_lock(True, lambda: released.append("x")) as taken:
        assert taken is True
        assert released == []
    assert released == ["x"]


def test_a_lock_try_lock_did_not_take_is_never_released() -> None:
    released: list[str] = []
    with tried_lock(False, lambda: released.append("x")) as taken:
        assert taken is False
    assert released == []
