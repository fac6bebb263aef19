"""The ``Store`` contract: mailboxes, message history and observations, and the file store's
on-disk lines."""

from __future__ import annotations

from datetime import timedelta

import attrs

from adapters.store.records import encode_message
from domain.attestation.grounding import DeliveryObserved, SpawnObserved
from tests.contract.store.world import MOMENT, SQUAD, StoreWorld, entry, message


def test_messages_are_history_plus_unrecorded_mail_sorted_by_time(world: StoreWorld) -> None:
    with world.store.transaction(SQUAD) as tx:
        tx.append_message("build", message(3))
        tx.append_message("build", message(1))
    with world.store.transaction(SQUAD) as tx:
        # m1 is in the history already; m2 only in the mailbox.
        tx.put_mailbox("build", (entry(1), entry(2)))
    assert [m.id for m in world.store.messages(SQUAD, "build")] == ["m1", "m2", "m3"]
    assert world.store.messages(SQUAD, "design") == []


def test_an_unchanged_mailbox_is_not_rewritten_and_mailboxes_are_per_task(
    world: StoreWorld,
) -> None:
    with world.store.transaction(SQUAD) as tx:
        tx.put_mailbox("build", (entry(1),))
    delivered = attrs.evolve(entry(1), delivered_at=MOMENT + timedelta(hours=1))
    with world.store.transaction(SQUAD) as tx:
        assert tx.mailbox("build") == (entry(1),)
        tx.put_mailbox("build", (entry(1),))
        tx.put_mailbox("build", (delivered,))
    assert world.store.mailbox(SQUAD, "build") == (delivered,)
    assert not world.store.mailbox(SQUAD, "build")[0].pending
    assert world.store.mailbox(SQUAD, "design") == ()


def test_observations_are_read_back_per_task_in_the_order_recorded(world: StoreWorld) -> None:
    spawn = SpawnObserved(at=MOMENT, child_id="c1")
    delivery = DeliveryObserved(
        at=MOMENT + timedelta(seconds=1),
        child_id="c1",
        session_file="/s.jsonl",
        tool_call_id="call-0",
        index=0,
        chunk_sha256="a" * 64,
    )
    world.store.record_observation(SQUAD, "build", spawn)
    world.store.record_observation(SQUAD, "build", delivery)
    assert world.store.observations(SQUAD, "build") == (spawn, delivery)
    assert world.store.observations(SQUAD, "design") == ()


def test_observations_recorded_after_a_read_are_seen(world: StoreWorld) -> None:
    first = SpawnObserved(at=MOMENT, child_id="c1")
    second = SpawnObserved(at=MOMENT + timedelta(seconds=1), child_id="c2")
    assert world.store.observations(SQUAD, "build") == ()
    world.store.record_observation(SQUAD, "build", first)
    assert world.store.observations(SQUAD, "build") == (first,)
    world.store.record_observation(SQUAD, "build", second)
    assert world.store.observations(SQUAD, "build") == (first, second)


def test_torn_tail_lines_are_skipped_and_never_swallow_the_next_record(
    file_world: StoreWorld,
) -> None:
    world = file_world
    with world.store.transaction(SQUAD) as tx:
        tx.append_message("build", message(1))
    world.store.record_observation(SQUAD, "build", SpawnObserved(at=MOMENT, child_id="c1"))
    for path, tail in (
        (world.layout.messages_file("build"), encode_message(message(2))[:20]),
        (world.layout.observed_file("build"), b'{"kind":"spawn","at'),
    ):
        world.fs.write_atomic(path, world.fs.read_small(path, 1 << 20) + tail)
    with world.store.transaction(SQUAD) as tx:
        tx.append_message("build", message(3))
    world.store.record_observation(SQUAD, "build", SpawnObserved(at=MOMENT, child_id="c2"))
    assert [m.id for m in world.store.messages(SQUAD, "build")] == ["m1", "m3"]
    assert [o.child_id for o in world.store.observations(SQUAD, "build")] == ["c1", "c2"]
