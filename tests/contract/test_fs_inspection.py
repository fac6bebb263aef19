"""Contract §5 inspection and removal (``list_dir``, ``is_dir``, ``exists``, ``remove_tree``,
``append_bytes``) against every file-system world, and which adapter a host gets."""

from __future__ import annotations

import os

import pytest

from adapters.fs.platform import file_system_for, native_file_system
from adapters.fs.windows import WindowsFileSystem
from tests.contract._fs_worlds import World, in_worlds
from tests.contract.fs_checks import contents
from tests.host_fs import posix_adapter


def test_list_dir_is_sorted_and_missing_directory_is_file_not_found(world: World) -> None:
    for name in ("b", "a", "C", "a-1"):
        world.write(name, b"")
    adapter = world.adapter()
    assert adapter.list_dir(world.root) == sorted(["b", "a", "C", "a-1"])
    with pytest.raises(FileNotFoundError):
        adapter.list_dir(world.path("absent"))


def test_is_dir_is_true_only_for_a_real_directory(world: World) -> None:
    adapter = world.adapter()
    directory = world.mkdir("d")
    assert adapter.is_dir(directory)
    assert not adapter.is_dir(world.symlink(directory, "link-to-d"))
    assert not adapter.is_dir(world.write("f", b""))
    assert not adapter.is_dir(world.path("absent"))
    assert not adapter.is_dir(world.path("f/beneath-a-file"))


@in_worlds("windows-fake")
def test_is_dir_is_false_for_a_junction(world: World) -> None:
    directory = world.mkdir("junction")
    world.mark_reparse_point(directory)
    assert not world.adapter().is_dir(directory)


def test_exists_sees_a_dangling_symlink(world: World) -> None:
    adapter = world.adapter()
    assert adapter.exists(world.symlink(world.path("nowhere"), "dangling"))
    assert adapter.exists(world.write("f", b""))
    assert not adapter.exists(world.path("absent"))


def test_remove_tree_removes_everything_including_a_read_only_file(world: World) -> None:
    adapter = world.adapter()
    world.mkdir("sq")
    world.mkdir("sq/spec")
    canonical = world.write("sq/spec/spec.v1.json", b"x")
    adapter.mark_read_only(canonical)
    world.write("sq/squad.json", b"{}")

    adapter.remove_tree(world.path("sq"))

    assert not adapter.exists(world.path("sq"))


def test_remove_tree_of_a_missing_tree_is_a_no_op(world: World) -> None:
    world.adapter().remove_tree(world.path("absent"))


def test_remove_tree_does_not_follow_a_symlink_inside_the_tree(world: World) -> None:
    outside = world.mkdir("outside")
    kept = world.write("outside/keep", b"kept")
    world.mkdir("sq")
    world.symlink(outside, "sq/escape")

    world.adapter().remove_tree(world.path("sq"))

    assert contents(kept) == b"kept"
    assert os.path.isdir(outside)


def test_remove_tree_refuses_a_symlink_at_the_root(world: World) -> None:
    outside = world.mkdir("outside")
    kept = world.write("outside/keep", b"kept")
    link = world.symlink(outside, "sq")
    with pytest.raises(OSError):  # noqa: PT011 (shutil's own refusal carries no errno)
        world.adapter().remove_tree(link)
    assert contents(kept) == b"kept"


def test_adapter_is_chosen_by_os_name() -> None:
    if os.name == "posix":  # the POSIX adapter cannot be imported on Windows
        assert isinstance(file_system_for("posix"), posix_adapter())
    assert isinstance(file_system_for("nt"), WindowsFileSystem)
    assert file_system_for("nt").flavour == "windows"
    with pytest.raises(RuntimeError, match="java"):
        file_system_for("java")


def test_native_file_system_matches_the_host() -> None:
    expected = "windows" if os.name == "nt" else "posix"
    assert native_file_system().flavour == expected


@pytest.mark.parametrize(
    ("existing", "expected"),
    [
        (None, b"new\n"),
        (b"", b"new\n"),
        (b"whole\n", b"whole\nnew\n"),
        (b'whole\n{"torn": ', b'whole\n{"torn": \nnew\n'),
    ],
    ids=["missing", "empty", "whole-last-line", "torn-last-line"],
)
def test_append_starts_a_new_line_after_a_torn_last_line(
    world: World, existing: bytes | None, expected: bytes
) -> None:
    path = world.path("log.jsonl") if existing is None else world.write("log.jsonl", existing)

    world.adapter().append_bytes(path, b"new\n")

    assert contents(path) == expected
