"""``create_squad`` over fakes (contract §5 destination rules, issue 3 publication).

Everything runs against the in-memory file system, so each test can look at every call the
use case made, in order, and at the whole tree it left behind.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import pytest

from adapters.store.json_records import JsonSquadCodec
from application.list_squads import list_squads
from application.squads.create_squad import (
    STAGING_LOCKS_DIR,
    remove_abandoned_staging,
    remove_orphan_staging_locks,
)
from domain.errors import ArtifactError, ErrorCode, PiSquadError, PublishError, SpecError
from domain.squad.ids import base36
from domain.squad.model import SpecRef
from tests.builders import artifact, sha, spec_document, squad_record, task
from tests.fakes.clock import FakeClock
from tests.fakes.filesystem import FsCall
from tests.fakes.publication import SQUAD_ROOT, MemoryPublication

STAGING_SHAPE = re.compile(r"^(?P<id>[a-z0-9-]+)\.creating\.[0-9a-f]{32}$")
CLOCK_START = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


@pytest.fixture
def world() -> MemoryPublication:
    return MemoryPublication(clock=FakeClock(current=CLOCK_START))


def squad_json(world: MemoryPublication, squad_id: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(world.fs.read(f"{SQUAD_ROOT}/{squad_id}/squad.json"))
    return document


def task_json(world: MemoryPublication, squad_id: str, task_id: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(
        world.fs.read(f"{SQUAD_ROOT}/{squad_id}/.records/{task_id}/task.json")
    )
    return document


def staging_dirs_made(world: MemoryPublication) -> list[FsCall]:
    """The ``make_dir_exclusive`` calls that created a staging directory."""
    return [
        call
        for call in world.fs.calls_of("make_dir_exclusive")
        if STAGING_SHAPE.match(call.path.rsplit("/", 1)[-1])
    ]


def occupy(world: MemoryPublication, squad_id: str) -> dict[str, bytes | None]:
    """Put a published squad of someone else at ``squad_id``; return its tree."""
    world.fs.add_file(f"{SQUAD_ROOT}/{squad_id}/squad.json", b'{"someone": "else"}\n', 0o600)
    world.fs.add_file(f"{SQUAD_ROOT}/{squad_id}/spec/spec.v1.json", b"their spec\n", 0o400)
    return world.fs.tree(f"{SQUAD_ROOT}/{squad_id}")


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


# ---- the squad ID -----------------------------------------------------------------------------


def test_the_squad_id_is_make_task_id_of_the_goal(world: MemoryPublication) -> None:
    published = world.publish(spec_document(goal="Ship the Café  feature, v2!"))
    assert published.squad.id == "ship-the-caf-feature-v2"
    assert published.squad_dir == f"{SQUAD_ROOT}/ship-the-caf-feature-v2"


def test_a_long_goal_gives_an_id_of_at_most_forty_characters(world: MemoryPublication) -> None:
    published = world.publish(spec_document(goal="word " * 30))
    assert published.squad.id == ("word-" * 8).rstrip("-")
    assert len(published.squad.id) <= 40


@pytest.mark.parametrize(
    "goal",
    [
        "東京",
        "!!!",
        "🙂 🙂",
        "---",
        # Red-team issue 11, finding 6: a goal naming a Windows device never becomes the id.
        "con",
        "NUL",
        "Lpt1",
        "com9",
    ],
)
def test_a_goal_without_a_path_safe_slug_gives_squad_and_twelve_hex_of_the_spec_hash(
    world: MemoryPublication, goal: str
) -> None:
    _, data = world.write_spec(spec_document(goal=goal))
    published = world.create(data)
    assert published.squad.id == f"squad-{sha(data)[:12]}"
    assert f"{SQUAD_ROOT}/{goal.lower()}" not in world.fs.nodes


def test_an_existing_id_gets_a_unique_suffix_chosen_before_staging(
    world: MemoryPublication,
) -> None:
    theirs = occupy(world, "ship-a-tested-feature")
    published = world.publish(spec_document())
    suffix = base36(int(CLOCK_START.timestamp() * 1000))
    assert published.squad.id == f"ship-a-tested-feature-{suffix}"
    # the staging directory already carried the final id, and the rename met no collision
    [staging] = staging_dirs_made(world)
    shape = STAGING_SHAPE.match(staging.path.rsplit("/", 1)[-1])
    assert shape is not None
    assert shape["id"] == published.squad.id
    assert len(world.fs.calls_of("rename_no_replace")) == 1
    assert world.fs.tree(f"{SQUAD_ROOT}/ship-a-tested-feature") == theirs


@pytest.mark.parametrize("reserved", ["agents", "knowledge"])
def test_a_goal_naming_a_reserved_root_entry_never_becomes_that_squad_id(
    world: MemoryPublication, reserved: str
) -> None:
    published = world.publish(spec_document(goal=reserved))
    assert published.squad.id != reserved
    assert published.squad.id.startswith(f"{reserved}-")
    assert f"{SQUAD_ROOT}/{reserved}" not in world.fs.nodes


def test_a_second_create_of_the_same_spec_gets_a_second_squad(world: MemoryPublication) -> None:
    first = world.publish(spec_document())
    second = world.create(world.fs.read(f"{world.cwd}/spec.json"))
    assert first.squad.id != second.squad.id
    assert [s.id for s in list_squads(world.fs, SQUAD_ROOT, world.codec)] == sorted(
        [first.squad.id, second.squad.id]
    )


# ---- what is written --------------------------------------------------------------------------


def test_squad_spec_has_exactly_the_contract_shape(world: MemoryPublication) -> None:
    _, data = world.write_spec(spec_document())
    published = world.create(data)
    squad_id = published.squad.id
    assert squad_json(world, squad_id)["spec"] == {
        "schemaVersion": 1,
        "sha256": sha(data),
        "bytes": len(data),
        "path": f"{SQUAD_ROOT}/{squad_id}/spec/spec.v1.json",
        "chunkBytes": 32768,
        "chunkCount": 1,
    }


def test_the_chunk_count_in_squad_spec_follows_the_chunk_algorithm(
    world: MemoryPublication,
) -> None:
    long_description = "é" * 40_000  # 80,000 bytes: three chunks
    _, data = world.write_spec(spec_document(tasks=[task("build", description=long_description)]))
    published = world.create(data)
    assert squad_json(world, published.squad.id)["spec"]["chunkCount"] == 3


def test_squad_json_carries_goal_cwd_agents_running_status_and_review_on_complete(
    world: MemoryPublication,
) -> None:
    published = world.publish(spec_document())
    document = squad_json(world, published.squad.id)
    assert document["id"] == published.squad.id
    assert document["goal"] == "Ship a tested feature."
    assert document["status"] == "running"
    assert document["cwd"] == world.cwd
    assert document["config"] == {
        "maxConcurrency": 2,
        "autoUnblock": True,
        "maxRetries": 2,
        "reviewOnComplete": True,
    }
    assert document["agents"] == {
        "backend": {"model": None, "thinking": None},
        "qa": {"model": "some-model", "thinking": "low"},
    }


def test_tasks_without_dependencies_are_pending_and_the_others_blocked(
    world: MemoryPublication,
) -> None:
    tasks = [
        task("design", agent="architect"),
        task("build", depends=["design"]),
        task("docs", agent="docs"),
        task("qa", agent="qa", depends=["build", "docs"]),
    ]
    agents = {name: {"model": None, "thinking": None} for name in ("architect", "backend", "docs")}
    agents["qa"] = {"model": None, "thinking": None}
    published = world.publish(spec_document(tasks=tasks, agents=agents))
    assert [t.id for t in published.tasks] == ["design", "build", "docs", "qa"]
    statuses = {t: task_json(world, published.squad.id, t)["status"] for t in ("design", "build")}
    statuses |= {t: task_json(world, published.squad.id, t)["status"] for t in ("docs", "qa")}
    assert statuses == {
        "design": "pending",
        "build": "blocked",
        "docs": "pending",
        "qa": "blocked",
    }
    qa = task_json(world, published.squad.id, "qa")
    assert (qa["agent"], qa["depends"], qa["title"]) == ("qa", ["build", "docs"], "Task qa")


def test_the_canonical_copy_is_the_source_bytes_exactly(world: MemoryPublication) -> None:
    # insignificant whitespace and no final newline: kept as they are, never reserialised
    data = json.dumps(spec_document(), indent=7).encode() + b"\n\n  "
    world.fs.add_file(f"{world.cwd}/spec.json", data)
    published = world.create(data)
    assert published.squad.spec is not None
    assert world.fs.read(published.squad.spec.path) == data


def test_the_canonical_copy_is_created_exclusively_0600_then_read_only_before_the_rename(
    world: MemoryPublication,
) -> None:
    published = world.publish(spec_document())
    calls = world.fs.calls
    [create] = [
        c
        for c in calls
        if c.operation == "create_file_exclusive" and c.path.endswith("/spec/spec.v1.json")
    ]
    [mark] = [c for c in calls if c.operation == "mark_read_only"]
    [rename] = [c for c in calls if c.operation == "rename_no_replace"]
    assert create.path.endswith("/spec/spec.v1.json")
    assert create.mode == 0o600
    assert mark.path == create.path
    assert calls.index(create) < calls.index(mark) < calls.index(rename)
    assert published.squad.spec is not None
    assert world.fs.mode(published.squad.spec.path) == 0o400


def test_the_canonical_copy_is_verified_against_the_hash_before_it_is_published(
    world: MemoryPublication,
) -> None:
    world.publish(spec_document())
    operations = world.fs.operations()
    reads = [c for c in world.fs.calls_of("read_stable") if c.path.endswith("/spec.v1.json")]
    assert len(reads) == 1
    assert world.fs.calls.index(reads[0]) < operations.index("rename_no_replace")


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


# ---- failures ---------------------------------------------------------------------------------

PUBLICATION_STEPS = [
    ("ensure_dir", 1),
    ("list_dir", 1),
    ("list_dir", 2),
    ("exists", 1),
    ("make_dir_exclusive", 1),
    ("make_dir_exclusive", 2),
    ("create_file_exclusive", 1),
    ("make_dir_exclusive", 3),
    ("create_file_exclusive", 2),
    ("create_file_exclusive", 4),
    ("read_stable", 2),
    ("mark_read_only", 1),
    # fsync_dir: each task's records directory (2 tasks), .records, spec, staging; then root
    ("fsync_dir", 1),
    ("fsync_dir", 3),
    ("fsync_dir", 4),
    ("fsync_dir", 5),
    ("rename_no_replace", 1),
    ("fsync_dir", 6),
]


@pytest.mark.parametrize(("operation", "call"), PUBLICATION_STEPS)
def test_an_io_error_at_a_publication_step_is_publish_failed_and_leaves_nothing(
    world: MemoryPublication, operation: str, call: int
) -> None:
    world.fs.fail(operation, call=call)
    _, data = world.write_spec(spec_document())
    with pytest.raises(PublishError) as caught:
        world.create(data)
    assert caught.value.code is ErrorCode.PUBLISH_FAILED
    assert "nothing was published, retrying is safe" in caught.value.message or (
        operation == "ensure_dir"
    )
    assert list_squads(world.fs, SQUAD_ROOT, world.codec) == []
    leftovers = [path for path in world.fs.tree(SQUAD_ROOT) if ".creating." in path]
    assert leftovers == []
    assert set(world.root_entries()) <= {STAGING_LOCKS_DIR}
    # and the next attempt publishes normally
    assert world.create(data).squad.id == "ship-a-tested-feature"


def test_a_failed_root_sync_withdraws_the_renamed_squad(world: MemoryPublication) -> None:
    world.fs.fail("fsync_dir", call=6)  # the root's, after five inside staging
    with pytest.raises(PublishError, match="root directory sync failed"):
        world.publish(spec_document())
    renames = world.fs.calls_of("rename_no_replace")
    assert [(r.path, r.target) for r in renames] == [
        (renames[0].path, f"{SQUAD_ROOT}/ship-a-tested-feature"),
        (f"{SQUAD_ROOT}/ship-a-tested-feature", renames[0].path),
    ]
    assert world.root_entries() == []


def test_an_unlistable_squad_root_is_publish_failed_before_anything_is_built(
    world: MemoryPublication,
) -> None:
    world.fs.fail("list_dir")
    with pytest.raises(PublishError, match="listing the squad root failed"):
        world.publish(spec_document())
    assert world.fs.calls_of("make_dir_exclusive") == []


def test_a_squad_root_under_a_regular_file_is_publish_failed(world: MemoryPublication) -> None:
    world.fs.add_file("/home/user/.pi", b"not a directory")
    with pytest.raises(PublishError) as caught:
        world.publish(spec_document())
    assert caught.value.code is ErrorCode.PUBLISH_FAILED
    assert caught.value.message.startswith(f"squad root {SQUAD_ROOT}")


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"spec_sha256": "0" * 64}, ErrorCode.SPEC_HASH_MISMATCH),
        ({"spec_file": "missing.json"}, ErrorCode.SPEC_UNSTABLE),
    ],
)
def test_a_spec_that_fails_validation_touches_no_destination(
    world: MemoryPublication, change: dict[str, str], code: ErrorCode
) -> None:
    _, data = world.write_spec(spec_document())
    with pytest.raises(SpecError) as caught:
        world.create(data, **change)
    assert caught.value.code is code
    assert world.fs.operations() == ["read_stable"]
    assert SQUAD_ROOT not in world.fs.nodes


def test_a_failure_never_quotes_the_goal(world: MemoryPublication) -> None:
    world.fs.fail("create_file_exclusive", call=2)
    with pytest.raises(PiSquadError) as caught:
        world.publish(spec_document(goal="TOP-SECRET plan"))
    assert "secret" not in caught.value.message.lower()


# ---- abandoned staging and orphan locks -------------------------------------------------------

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


# -- red-team issue 11, finding 2: the declared size is checked before any byte is read --------


def test_an_artifact_longer_than_declared_is_refused_before_a_byte_of_it_is_read(
    world: MemoryPublication,
) -> None:
    declared = b"twelve bytes"
    path = world.fs.add_file("/data/big.bin", declared + b"x" * (1 << 20))
    _, data = world.write_spec(spec_document(artifacts=[artifact("big", path, declared)]))
    read_before = world.fs.bytes_read

    with pytest.raises(ArtifactError) as caught:
        world.create(data)

    assert caught.value.code is ErrorCode.ARTIFACT_SIZE_MISMATCH
    assert f"file is {len(declared) + (1 << 20)} bytes; the spec declares 12" in (
        caught.value.message
    )
    # Only the spec itself was read; not one byte of the artifact.
    assert world.fs.bytes_read - read_before == len(data)
    assert world.fs.calls_of("digest_stable") == [FsCall("digest_stable", path)]
