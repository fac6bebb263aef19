"""``Poller`` (application/polling.py): calls between ``start`` and ``stop`` only, one thread
at a time, none at all without an interval."""

from __future__ import annotations

import threading
import time

from application.polling import Poller

INTERVAL = 0.01
WAIT = 5.0


def test_it_calls_until_stopped_and_again_after_a_restart() -> None:
    calls: list[float] = []
    called = threading.Event()

    def tick() -> None:
        calls.append(time.monotonic())
        called.set()

    poller = Poller(tick, INTERVAL, "test-poller")
    poller.start()
    poller.start()  # already running: still one thread
    assert called.wait(WAIT)
    assert [t.name for t in threading.enumerate()].count("test-poller") == 1
    poller.stop()
    stopped_at = len(calls)
    time.sleep(10 * INTERVAL)
    assert len(calls) == stopped_at
    called.clear()
    poller.start()
    assert called.wait(WAIT)
    poller.stop()


def test_a_stop_from_inside_a_call_ends_the_calls() -> None:
    calls: list[int] = []
    poller: Poller

    def tick() -> None:
        calls.append(1)
        poller.stop()

    poller = Poller(tick, INTERVAL, "test-poller-self-stop")
    poller.start()
    deadline = time.monotonic() + WAIT
    while not calls and time.monotonic() < deadline:
        time.sleep(INTERVAL)
    time.sleep(10 * INTERVAL)
    assert calls == [1]


def test_without_an_interval_nothing_runs() -> None:
    calls: list[int] = []
    poller = Poller(lambda: calls.append(1), 0, "test-poller-off")
    poller.start()
    time.sleep(10 * INTERVAL)
    poller.stop()
    assert calls == []
    assert "test-poller-off" not in [t.name for t in threading.enumerate()]
