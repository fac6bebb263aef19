"""Ctrl+C while driving is a stop request read at a safe point, never an exception raised
between a lock's acquire and the ``try`` that releases it (the CI failure of 3 December: the
interrupted driver leaked the squad lock to itself and its own clean-up then timed out on it)."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from application.ports import SquadSnapshot
from application.squads.drive import drive_squad
from domain.squad.model import TaskStatus
from entrypoints.interrupts import sigint_as_stop_request
from tests.runtime_world import RuntimeWorld


def test_ctrl_c_sets_the_flag_and_wakes_without_raising(capsys: pytest.CaptureFixture[str]) -> None:
    woken = threading.Event()
    before = signal.getsignal(signal.SIGINT)
    with sigint_as_stop_request(woken.set) as should_stop:
        assert not should_stop()
        signal.raise_signal(signal.SIGINT)
        assert should_stop()
        assert woken.wait(timeout=5.0), "the wake ran (on a thread of its own)"
        signal.raise_signal(signal.SIGINT)  # a second press while stopping: no exception
        assert should_stop()
    assert signal.getsignal(signal.SIGINT) is before, "the previous handler is back"
    assert "already stopping" in capsys.readouterr().err


def test_outside_the_main_thread_nothing_is_installed() -> None:
    seen: list[object] = []

    def off_main() -> None:
        with sigint_as_stop_request(lambda: None) as should_stop:
            seen.append(signal.getsignal(signal.SIGINT))
            seen.append(should_stop())

    before = signal.getsignal(signal.SIGINT)
    thread = threading.Thread(target=off_main)
    thread.start()
    thread.join(timeout=5.0)
    assert seen == [before, False]


def test_ctrl_c_during_a_drive_suspends_every_live_task(world: RuntimeWorld) -> None:
    scheduler = world.scheduler()
    pressed = threading.Event()

    def on_progress(_snapshot: SquadSnapshot) -> None:
        if world.runtime.spawned and not pressed.is_set():
            pressed.set()
            # From another thread, as a terminal delivers it: the handler runs on the main one.
            threading.Thread(target=os.kill, args=(os.getpid(), signal.SIGINT)).start()

    with sigint_as_stop_request(scheduler.wake) as should_stop:
        outcome = drive_squad(
            scheduler,
            store=world.store,
            locks=world.locks,
            on_progress=on_progress,
            should_stop=should_stop,
        )
    assert pressed.is_set()
    assert outcome.reason == "interrupted"
    assert world.runtime.spawned
    assert all(child.killed for child in world.runtime.spawned)
    statuses = {task.status for task in outcome.snapshot.tasks.values()}
    assert TaskStatus.SUSPENDED in statuses
    assert TaskStatus.IN_PROGRESS not in statuses
