"""The drive loop is event-driven (issue 14): while its children are idle it sleeps until an
event, a ``wake`` or the scheduler's next deadline, instead of re-reading the squad several times
a second; a stop request is delivered by ``wake`` at once. The fake clock stands still here, so
the scheduler's next deadline (the reconcile tick, 5 s) never comes on its own."""

from __future__ import annotations

import threading
import time

import attrs

from application.ports import SquadSnapshot
from application.squads.drive import DriveOutcome, drive_squad
from domain.squad.model import SquadStatus
from tests.runtime_world import RuntimeWorld


def test_an_idle_driver_sleeps_and_a_wake_delivers_a_stop(world: RuntimeWorld) -> None:
    scheduler = world.scheduler()
    stop = threading.Event()
    turns: list[int] = []
    started = threading.Event()
    outcome: list[DriveOutcome] = []

    def on_progress(_snapshot: SquadSnapshot) -> None:
        turns.append(len(turns))
        started.set()

    def run() -> None:
        outcome.append(
            drive_squad(
                scheduler,
                store=world.store,
                locks=world.locks,
                on_progress=on_progress,
                should_stop=stop.is_set,
            )
        )

    driver = threading.Thread(target=run)
    driver.start()
    assert started.wait(timeout=10.0)
    time.sleep(0.6)  # the old loop read the squad every 0.2 s: three more turns by now
    assert len(turns) == 1, "no turn without an event or a deadline"
    stop.set()
    scheduler.wake()
    driver.join(timeout=5.0)
    assert not driver.is_alive(), "the wake ended the sleep"
    assert [o.reason for o in outcome] == ["interrupted"]
    assert world.runtime.spawned, "children were running"
    assert all(child.killed for child in world.runtime.spawned)


def test_a_child_event_wakes_the_driver(world: RuntimeWorld) -> None:
    scheduler = world.scheduler()
    stop = threading.Event()
    turns = threading.Semaphore(0)

    def run() -> None:
        drive_squad(
            scheduler,
            store=world.store,
            locks=world.locks,
            on_progress=lambda _snapshot: turns.release(),
            should_stop=stop.is_set,
        )

    driver = threading.Thread(target=run)
    driver.start()
    assert turns.acquire(timeout=10.0)
    child = world.runtime.spawned[0]
    child.say("working on it")
    assert turns.acquire(timeout=2.0), "the event started a turn before the 5 s deadline"
    stop.set()
    scheduler.wake()
    driver.join(timeout=5.0)
    assert not driver.is_alive()


def test_a_squad_the_first_reconcile_leaves_stopped_is_returned_without_a_wait(
    world: RuntimeWorld,
) -> None:
    with world.store.transaction(world.squad_id) as tx:
        tx.put_squad(attrs.evolve(tx.squad, status=SquadStatus.PAUSED))
    outcome: list[DriveOutcome] = []
    driver = threading.Thread(
        target=lambda: outcome.append(
            drive_squad(world.scheduler(), store=world.store, locks=world.locks)
        )
    )
    driver.start()
    driver.join(timeout=3.0)  # the next deadline is 5 s away and the fake clock stands still
    assert not driver.is_alive(), "judged before the first wait"
    assert [o.reason for o in outcome] == ["paused"]
