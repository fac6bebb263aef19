"""The ``Store`` contract: a store may keep what it read (the file store caches decoded
records), yet a record changed, replaced, deleted or corrupted by another writer after it was
read is seen at once."""

from __future__ import annotations

import attrs
import pytest

from adapters.store.json_records import JsonSquadCodec
from adapters.store.records import encode_observation
from domain.attestation.grounding import SpawnObserved
from domain.errors import SquadIntegrityError
from domain.squad.model import TaskStatus
from tests.contract.store.world import (
    MOMENT,
    SQUAD,
    StoreWorld,
    integrity_failure,
    make_task,
    read_everything,
)


def test_a_record_replaced_by_another_writer_after_a_read_is_seen(world: StoreWorld) -> None:
    read_everything(world)
    changed = attrs.evolve(make_task("design"), status=TaskStatus.FAILED, error="broke")
    world.replace_record("design", changed)
    assert world.store.snapshot(SQUAD).tasks["design"] == changed
    with world.store.transaction(SQUAD) as tx:
        assert tx.tasks["design"] == changed


def test_a_same_size_rewrite_after_a_read_is_seen(world: StoreWorld) -> None:
    read_everything(world)
    codec = JsonSquadCodec()
    renamed = attrs.evolve(make_task("design"), title="Task dezign")
    assert len(codec.encode_task(renamed)) == len(codec.encode_task(make_task("design")))
    world.replace_record("design", renamed)
    assert world.store.snapshot(SQUAD).tasks["design"].title == "Task dezign"


def test_a_record_deleted_after_a_read_is_an_integrity_failure(world: StoreWorld) -> None:
    read_everything(world)
    world.lose_task("build")
    assert "task 'build' is pinned but" in integrity_failure(world)


def test_a_record_corrupted_after_a_read_is_an_integrity_failure(world: StoreWorld) -> None:
    read_everything(world)
    world.corrupt_task("build")
    assert "task 'build': " in integrity_failure(world)
    world.replace_record("build", make_task("build", depends=("design",)))
    assert world.store.snapshot(SQUAD).tasks["build"] == make_task("build", depends=("design",))


def test_a_record_naming_another_task_after_a_read_is_an_integrity_failure(
    world: StoreWorld,
) -> None:
    read_everything(world)
    world.replace_record("build", make_task("other"))
    assert "the record of task 'build' names another task" in integrity_failure(world)


def test_a_file_transaction_reads_only_the_records_it_uses(file_world: StoreWorld) -> None:
    """The file store checks a record when the transaction first uses it: a decision about
    one task neither reads nor waits on the others (each is still checked when used)."""
    world = file_world
    world.lose_task("build")
    started = attrs.evolve(make_task("design"), status=TaskStatus.IN_PROGRESS)
    with world.store.transaction(SQUAD) as tx:
        assert list(tx.tasks) == ["design", "build"]
        assert len(tx.tasks) == 2
        tx.put_task(attrs.evolve(tx.tasks["design"], status=TaskStatus.IN_PROGRESS))
    world.replace_record("build", make_task("build", depends=("design",)))
    assert world.store.snapshot(SQUAD).tasks["design"] == started


def test_a_record_replaced_during_a_file_transaction_is_seen_at_its_first_use(
    file_world: StoreWorld,
) -> None:
    """A writer that ignores the lock (a child without isolation) and replaces a record after
    the transaction began, before the transaction uses it, is seen: the check runs at use."""
    world = file_world
    read_everything(world)
    changed = attrs.evolve(make_task("design"), status=TaskStatus.FAILED, error="forged")
    with world.store.transaction(SQUAD) as tx:
        world.replace_record("design", changed)
        assert tx.tasks["design"] == changed
    with world.store.transaction(SQUAD) as tx:
        world.corrupt_task("build")
        with pytest.raises(SquadIntegrityError):
            tx.tasks.get("build")


def test_observations_changed_behind_the_stores_back_after_a_read_are_seen(
    file_world: StoreWorld,
) -> None:
    """The file store keeps decoded observations per file identity: a foreign append, a
    same-size replacement and a deletion after a read all show at once."""
    first = SpawnObserved(at=MOMENT, child_id="c1")
    other = SpawnObserved(at=MOMENT, child_id="c9")
    file_world.store.record_observation(SQUAD, "build", first)
    assert file_world.store.observations(SQUAD, "build") == (first,)
    path = file_world.layout.observed_file("build")
    file_world.fs.append_bytes(path, encode_observation(other))
    assert file_world.store.observations(SQUAD, "build") == (first, other)
    file_world.fs.write_atomic(path, encode_observation(other) + encode_observation(first))
    assert file_world.store.observations(SQUAD, "build") == (other, first)
    file_world.fs.remove_file(path)
    assert file_world.store.observations(SQUAD, "build") == ()
