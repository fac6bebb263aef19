"""``create_squad``: what a builder killed mid-way left (staging directories, staging locks)
is swept, and nothing else is."""

from __future__ import annotations

import pytest

from adapters.store.json_records import JsonSquadCodec
from application.squads.create_squad import (
    STAGING_LOCKS_DIR,
    remove_abandoned_staging,
    remove_orphan_staging_locks,
)
from domain.errors import PublishError
from domain.squad.model import SpecRef
from tests.builders import spec_document, squad_record
from tests.fakes.publication import SQUAD_ROOT, MemoryPublication
from tests.unit.application.squads.create_squad.staging_calls import CLOCK_START


def published_squad_record(squad_id: str, spec_path: str) -> bytes:
    """A ``squad.json`` as the codec writes it, whose canonical spec is at ``spec_path``."""
    squad = squad_record(
        squad_id,
        goal="An older squad",
        created=CLOCK_START,
        cwd="/elsewhere",
        spec=SpecRef(sha256="0" * 64, bytes=10, path=spec_path, chunk_count=1),
    )
    return JsonSquadCodec().encode_squad(squad)


ABANDONED = "ship-it.creating." + "a" * 32


def make_staging(world: MemoryPublication, name: str) -> str:
    path = world.fs.add_dir(f"{SQUAD_ROOT}/{name}")
    world.fs.add_file(f"{path}/spec/spec.v1.json", b"half written", 0o600)
    return path


def test_an_abandoned_staging_directory_is_removed_with_its_lock(
    world: MemoryPublication,
) -> None:
    make_staging(world, ABANDONED)
    assert remove_abandoned_staging(world.publisher) == [ABANDONED]
    assert world.root_entries() == []
    assert world.locks.discarded == [world.lock_path(ABANDONED)]


def test_create_removes_abandoned_staging_before_it_builds(world: MemoryPublication) -> None:
    make_staging(world, ABANDONED)
    published = world.publish(spec_document())
    assert world.root_entries() == [published.squad.id]
    first_removal = world.fs.operations().index("remove_tree")
    assert first_removal < world.fs.operations().index("make_dir_exclusive")


def test_a_staging_directory_whose_lock_is_held_is_left_alone(world: MemoryPublication) -> None:
    make_staging(world, ABANDONED)
    world.locks.held_elsewhere.add(world.lock_path(ABANDONED))
    assert remove_abandoned_staging(world.publisher) == []
    assert world.fs.read(f"{SQUAD_ROOT}/{ABANDONED}/spec/spec.v1.json") == b"half written"
    assert world.locks.discarded == []


def test_a_symlink_named_like_staging_is_neither_followed_nor_removed(
    world: MemoryPublication,
) -> None:
    target = world.fs.add_dir("/home/user/precious")
    world.fs.add_file(f"{target}/data.txt", b"keep me")
    world.fs.add_symlink(f"{SQUAD_ROOT}/{ABANDONED}", target)
    assert remove_abandoned_staging(world.publisher) == []
    assert world.fs.read(f"{target}/data.txt") == b"keep me"
    assert f"{SQUAD_ROOT}/{ABANDONED}" in world.fs.nodes
    assert world.fs.calls_of("remove_tree") == []


@pytest.mark.parametrize(
    "name",
    [
        "ship-it.creating.tmp",
        "ship-it.creating." + "a" * 31,
        "ship-it.creating." + "A" * 32,
        "Ship-It.creating." + "a" * 32,
        "ship-it.creating." + "a" * 32 + ".old",
        "-ship.creating." + "a" * 32,
        "ship-it",
    ],
)
def test_a_directory_not_shaped_like_staging_is_left_alone(
    world: MemoryPublication, name: str
) -> None:
    make_staging(world, name)
    assert remove_abandoned_staging(world.publisher) == []
    assert f"{SQUAD_ROOT}/{name}/spec/spec.v1.json" in world.fs.nodes


def test_a_staging_directory_a_published_squad_refers_to_is_left_alone(
    world: MemoryPublication,
) -> None:
    make_staging(world, ABANDONED)
    world.fs.add_file(
        f"{SQUAD_ROOT}/older/squad.json",
        published_squad_record("older", f"{SQUAD_ROOT}/{ABANDONED}/spec/spec.v1.json"),
    )
    assert remove_abandoned_staging(world.publisher) == []
    assert f"{SQUAD_ROOT}/{ABANDONED}/spec/spec.v1.json" in world.fs.nodes


def test_a_regular_file_named_like_staging_is_left_alone(world: MemoryPublication) -> None:
    world.fs.add_file(f"{SQUAD_ROOT}/{ABANDONED}", b"a file")
    assert remove_abandoned_staging(world.publisher) == []
    assert world.fs.read(f"{SQUAD_ROOT}/{ABANDONED}") == b"a file"


def test_an_orphan_staging_lock_is_discarded_while_held_and_once_more_after(
    world: MemoryPublication,
) -> None:
    lock = world.fs.add_file(world.lock_path(ABANDONED), b"")
    assert remove_orphan_staging_locks(world.publisher) == [f"{ABANDONED}.lock"]
    assert world.locks.acquired == [lock]
    assert world.locks.discarded == [lock, lock]


def test_a_held_staging_lock_without_its_directory_is_kept(world: MemoryPublication) -> None:
    # a builder between taking its lock and creating its staging directory
    lock = world.fs.add_file(world.lock_path(ABANDONED), b"")
    world.locks.held_elsewhere.add(lock)
    assert remove_orphan_staging_locks(world.publisher) == []
    assert world.locks.discarded == []


def test_a_staging_lock_whose_directory_exists_is_left_to_the_staging_sweep(
    world: MemoryPublication,
) -> None:
    world.fs.add_file(world.lock_path(ABANDONED), b"")
    make_staging(world, ABANDONED)
    assert remove_orphan_staging_locks(world.publisher) == []
    assert world.locks.acquired == []


@pytest.mark.parametrize("name", ["notes.txt", "ship-it.lock", f"{ABANDONED}.lock.bak"])
def test_a_file_not_shaped_like_a_staging_lock_is_left_alone(
    world: MemoryPublication, name: str
) -> None:
    world.fs.add_file(f"{SQUAD_ROOT}/{STAGING_LOCKS_DIR}/{name}", b"")
    assert remove_orphan_staging_locks(world.publisher) == []
    assert world.locks.acquired == []


def test_create_sweeps_orphan_locks_left_by_a_builder_killed_after_its_rename(
    world: MemoryPublication,
) -> None:
    first = world.publish(spec_document())
    # as if that builder had been killed right after its rename: its lock file stayed
    leftover = world.fs.add_file(world.lock_path(f"{first.squad.id}.creating.{'b' * 32}"), b"")
    world.create(world.fs.read(f"{world.cwd}/spec.json"))
    assert leftover in world.locks.discarded


def test_create_fails_closed_when_the_lock_directory_cannot_be_listed(
    world: MemoryPublication,
) -> None:
    world.fs.fail("list_dir", call=2)
    with pytest.raises(PublishError):
        world.publish(spec_document())
    assert world.root_entries() == []
