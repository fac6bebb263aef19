"""``create_squad``: the squad is built in a private staging directory, made durable, then
published by one no-replace rename under a staging lock."""

from __future__ import annotations

from tests.builders import spec_document
from tests.fakes.fake_tree import FsCall
from tests.fakes.publication import SQUAD_ROOT, MemoryPublication
from tests.unit.application.squads.create_squad.staging_calls import staging_dirs_made


def test_staging_is_a_0700_sibling_named_id_creating_32_hex_renamed_onto_the_squad_dir(
    world: MemoryPublication,
) -> None:
    published = world.publish(spec_document())
    [staging] = staging_dirs_made(world)
    assert staging.mode == 0o700
    assert staging.path.rsplit("/", 1)[0] == SQUAD_ROOT
    [rename] = world.fs.calls_of("rename_no_replace")
    assert (rename.path, rename.target) == (staging.path, published.squad_dir)
    # every directory inside the staging directory is 0700 too
    inner = [c for c in world.fs.calls_of("make_dir_exclusive") if c is not staging]
    assert inner
    assert {c.mode for c in inner} == {0o700}
    assert all(c.path.startswith(staging.path + "/") for c in inner)


def test_staging_directories_are_synced_before_the_rename_and_the_root_after_it(
    world: MemoryPublication,
) -> None:
    world.publish(spec_document())
    sequence = [
        (c.operation, c.path)
        for c in world.fs.calls
        if c.operation in ("fsync_dir", "rename_no_replace")
    ]
    [staging] = staging_dirs_made(world)
    assert sequence == [
        ("fsync_dir", f"{staging.path}/.records/build"),
        ("fsync_dir", f"{staging.path}/.records/qa"),
        ("fsync_dir", f"{staging.path}/.records"),
        ("fsync_dir", f"{staging.path}/spec"),
        ("fsync_dir", staging.path),
        ("rename_no_replace", staging.path),
        ("fsync_dir", SQUAD_ROOT),
    ]


def test_every_staged_entry_is_durable_before_the_rename_publishes_it(
    world: MemoryPublication,
) -> None:
    """State files are created in place in staging (no temporary name, no rename), so
    durability rests on this: every file is written by ``create_file_exclusive`` (which
    fsyncs it), and every directory that received an entry is fsynced after its last entry
    and before the rename."""
    world.publish(spec_document())
    calls = world.fs.calls
    [staging] = staging_dirs_made(world)
    [rename] = world.fs.calls_of("rename_no_replace")
    made = [
        c
        for c in calls
        if c.operation in ("make_dir_exclusive", "create_file_exclusive")
        and c.path.startswith(staging.path + "/")
    ]
    assert {c.operation for c in made} == {"make_dir_exclusive", "create_file_exclusive"}
    assert [c for c in calls if c.operation == "write_atomic"] == []
    synced = {c.path: calls.index(c) for c in calls if c.operation == "fsync_dir"}
    for entry in made:
        parent = entry.path.rsplit("/", 1)[0]
        assert parent in synced, f"{parent} never synced"
        assert calls.index(entry) < synced[parent] < calls.index(rename)


def test_the_staging_lock_is_held_while_building_and_its_file_discarded_after(
    world: MemoryPublication,
) -> None:
    world.publish(spec_document())
    [staging] = staging_dirs_made(world)
    lock = world.lock_path(staging.path.rsplit("/", 1)[-1])
    assert world.locks.acquired == [lock]
    assert world.locks.discarded == [lock]


def test_a_staging_lock_lost_to_a_sweeper_makes_the_builder_take_another_name(
    world: MemoryPublication,
) -> None:
    # SequentialIds: the first staging name takes the second uuid (the first is drawn for an
    # id candidate); a "sweeper" holds that one's lock.
    taken_elsewhere = world.lock_path(f"ship-a-tested-feature.creating.{2:032x}")
    world.locks.held_elsewhere.add(taken_elsewhere)
    published = world.publish(spec_document())
    assert published.squad.id == "ship-a-tested-feature"
    [staging] = staging_dirs_made(world)
    assert world.lock_path(staging.path.rsplit("/", 1)[-1]) != taken_elsewhere


def test_no_file_system_call_follows_a_successful_root_sync(world: MemoryPublication) -> None:
    world.publish(spec_document())
    assert world.fs.calls[-1] == FsCall("fsync_dir", SQUAD_ROOT)
