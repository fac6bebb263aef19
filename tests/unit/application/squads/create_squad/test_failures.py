"""``create_squad``: a failure at any step is one coded error and leaves nothing behind."""

from __future__ import annotations

import pytest

from application.list_squads import list_squads
from application.squads.create_squad import STAGING_LOCKS_DIR
from domain.errors import ArtifactError, ErrorCode, PiSquadError, PublishError, SpecError
from tests.builders import artifact, spec_document
from tests.fakes.fake_tree import FsCall
from tests.fakes.publication import SQUAD_ROOT, MemoryPublication

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
