"""Contract §5 destination steps (exclusive creation, atomic writes, no-replace rename,
directories, read-only canonical file) against every file-system world."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator

import pytest

from tests.contract._fs_worlds import POSIX_KINDS, REAL_KIND, WINDOWS_KINDS, World, in_worlds
from tests.contract.fs_checks import contents
from tests.host_fs import posix_file_system


@pytest.fixture(params=[0o000, 0o022, 0o077, 0o777])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """Runs the test under each umask (the fake worlds keep their own umask)."""
    mask: int = request.param
    previous = os.umask(mask)
    try:
        yield mask
    finally:
        os.umask(previous)


def test_create_file_exclusive_writes_the_exact_bytes(world: World) -> None:
    path = world.path("spec.v1.json")
    data = b'{ "goal" : "x" }\n\n'
    world.adapter().create_file_exclusive(path, data, 0o600)
    assert contents(path) == data


@in_worlds(*POSIX_KINDS)
def test_create_file_exclusive_sets_mode_0600_whatever_the_umask(world: World, umask: int) -> None:
    path = world.path("spec.v1.json")
    world.adapter().create_file_exclusive(path, b"x", 0o600)
    assert world.mode(path) == 0o600


def test_create_file_exclusive_refuses_an_existing_file_and_leaves_it_alone(world: World) -> None:
    path = world.write("spec.v1.json", b"first")
    with pytest.raises(FileExistsError):
        world.adapter().create_file_exclusive(path, b"second", 0o600)
    assert contents(path) == b"first"


def test_create_file_exclusive_refuses_a_dangling_symlink(world: World) -> None:
    outside = world.path("outside")
    link = world.symlink(outside, "spec.v1.json")
    with pytest.raises(OSError) as caught:  # noqa: PT011 (errno checked below)
        world.adapter().create_file_exclusive(link, b"x", 0o600)
    # The emulator reports O_NOFOLLOW's ELOOP where POSIX reports O_EXCL's EEXIST.
    refusals = {errno.EEXIST, errno.ELOOP} if world.kind == "posix-fake" else {errno.EEXIST}
    assert caught.value.errno in refusals
    assert not os.path.lexists(outside)


def test_write_atomic_creates_then_replaces_and_leaves_no_temporary_file(world: World) -> None:
    directory = world.mkdir("squad")
    path = world.path("squad/squad.json")
    adapter = world.adapter()

    adapter.write_atomic(path, b"one")
    adapter.write_atomic(path, b"two, longer")

    assert contents(path) == b"two, longer"
    assert adapter.list_dir(directory) == ["squad.json"]


@in_worlds(*POSIX_KINDS)
def test_write_atomic_file_is_private_to_the_owner_whatever_the_umask(
    world: World, umask: int
) -> None:
    path = world.path("state.json")
    world.adapter().write_atomic(path, b"{}")
    assert world.mode(path) == 0o600


def test_failed_write_atomic_removes_its_temporary_file(world: World) -> None:
    world.mkdir("target")
    world.write("target/occupant", b"keeps the directory non-empty")
    adapter = world.adapter()

    with pytest.raises(OSError):  # noqa: PT011 (the errno differs by system; any refusal will do)
        adapter.write_atomic(world.path("target"), b"cannot replace a directory")

    assert adapter.list_dir(world.root) == ["target"]


def test_remove_temporaries_removes_only_the_temp_files_write_atomic_leaves_for_that_path(
    world: World,
) -> None:
    world.write("state.json", b"kept")
    world.write(".state.json.tmp.4242.0123456789abcdef", b"a writer died here")
    world.write(".state.json.tmp.99.fedcba9876543210", b"and here")
    world.write(".other.json.tmp.4242.0123456789abcdef", b"another record's")
    world.write("state.json.tmp.1.x", b"not write_atomic's name")
    world.mkdir(".state.json.tmp.dir")
    adapter = world.adapter()
    assert adapter.remove_temporaries(world.path("state.json")) == 2
    assert adapter.list_dir(world.root) == sorted(
        [
            ".other.json.tmp.4242.0123456789abcdef",
            ".state.json.tmp.dir",
            "state.json",
            "state.json.tmp.1.x",
        ]
    )
    assert adapter.remove_temporaries(world.path("missing-dir/state.json")) == 0


def _staged(world: World) -> tuple[str, str]:
    staging = world.mkdir("sq.creating.1234")
    world.write("sq.creating.1234/spec.json", b"staged")
    return staging, world.path("sq")


def test_rename_no_replace_moves_a_staged_directory(world: World) -> None:
    staging, final = _staged(world)
    world.adapter().rename_no_replace(staging, final)
    assert contents(world.path("sq/spec.json")) == b"staged"
    assert not os.path.lexists(staging)


def test_rename_no_replace_refuses_an_existing_empty_directory(world: World) -> None:
    staging, final = _staged(world)
    os.mkdir(final)
    with pytest.raises(FileExistsError):
        world.adapter().rename_no_replace(staging, final)
    assert os.listdir(final) == []
    assert contents(world.path("sq.creating.1234/spec.json")) == b"staged"


def test_rename_no_replace_refuses_an_existing_file(world: World) -> None:
    staging, final = _staged(world)
    with open(final, "wb") as handle:
        handle.write(b"occupant")
    with pytest.raises(FileExistsError):
        world.adapter().rename_no_replace(staging, final)
    assert contents(final) == b"occupant"


def test_rename_no_replace_refuses_a_dangling_symlink(world: World) -> None:
    staging, final = _staged(world)
    os.symlink(world.path("nowhere"), final)
    with pytest.raises(FileExistsError):
        world.adapter().rename_no_replace(staging, final)
    assert os.path.islink(final)


@in_worlds(REAL_KIND)
def test_lexists_fallback_also_refuses_an_existing_empty_directory(world: World) -> None:
    staging, final = _staged(world)
    os.mkdir(final)
    with pytest.raises(FileExistsError):
        posix_file_system(kernel_no_replace=False).rename_no_replace(staging, final)
    posix_file_system(kernel_no_replace=False).rename_no_replace(staging, world.path("other"))
    assert contents(world.path("other/spec.json")) == b"staged"


@in_worlds(*POSIX_KINDS)
def test_rename_no_replace_of_a_missing_source_is_file_not_found(world: World) -> None:
    with pytest.raises(FileNotFoundError):
        world.adapter().rename_no_replace(world.path("absent"), world.path("target"))


@in_worlds(*POSIX_KINDS)
def test_make_dir_exclusive_sets_exactly_0700_whatever_the_umask(world: World, umask: int) -> None:
    path = world.path("sq.creating.1")
    world.adapter().make_dir_exclusive(path, 0o700)
    assert world.mode(path) == 0o700


def test_make_dir_exclusive_refuses_anything_already_there(world: World) -> None:
    adapter = world.adapter()
    existing = world.mkdir("d")
    with pytest.raises(FileExistsError):
        adapter.make_dir_exclusive(existing, 0o700)
    with pytest.raises(FileExistsError):
        adapter.make_dir_exclusive(world.write("f", b""), 0o700)


def test_ensure_dir_creates_parents_and_is_idempotent(world: World) -> None:
    path = world.path("a/b/c")
    adapter = world.adapter()
    adapter.ensure_dir(path, 0o700)
    adapter.ensure_dir(path, 0o700)
    assert adapter.is_dir(path)


def test_ensure_dir_refuses_a_file_in_the_way(world: World) -> None:
    with pytest.raises(FileExistsError):
        world.adapter().ensure_dir(world.write("f", b""), 0o700)


def test_fsync_dir_accepts_a_directory(world: World) -> None:
    world.adapter().fsync_dir(world.mkdir("d"))


@in_worlds(*POSIX_KINDS)
def test_fsync_dir_of_a_missing_directory_fails(world: World) -> None:
    with pytest.raises(FileNotFoundError):
        world.adapter().fsync_dir(world.path("absent"))


@in_worlds(*WINDOWS_KINDS)
def test_fsync_dir_is_a_no_op_on_windows(world: World) -> None:
    world.adapter().fsync_dir(world.path("absent"))


@in_worlds(*POSIX_KINDS)
def test_mark_read_only_gives_mode_0400(world: World) -> None:
    path = world.write("spec.v1.json", b"x")
    world.adapter().mark_read_only(path)
    assert world.mode(path) == 0o400


@in_worlds(*WINDOWS_KINDS)
def test_mark_read_only_sets_the_windows_read_only_bit(world: World) -> None:
    path = world.write("spec.v1.json", b"x")
    world.adapter().mark_read_only(path)
    assert world.mode(path) & stat.S_IWRITE == 0
    with pytest.raises(PermissionError):
        open(path, "wb").close()


def test_write_operations_refuse_a_relative_path(world: World) -> None:
    adapter = world.adapter()
    with pytest.raises(ValueError, match="absolute"):
        adapter.create_file_exclusive("relative.json", b"x", 0o600)
    with pytest.raises(ValueError, match="absolute"):
        adapter.rename_no_replace(world.path("a"), "b")
    with pytest.raises(ValueError, match="absolute"):
        adapter.make_dir_exclusive("d", 0o700)
