"""Contract §5 stable reads against a racing writer, in every file-system world: the path
changes between ``lstat`` and ``open``, or the file changes while it is read."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable

import pytest

from application.ports import ReadFailure, StableReadError
from tests.contract._fs_worlds import POSIX_KINDS, InterleavingMixin, World, deadline, in_worlds
from tests.contract.fs_checks import LIMIT, refused_unread


@pytest.mark.parametrize(
    "read",
    [
        lambda adapter, path: adapter.read_stable(path, max_bytes=LIMIT),
        lambda adapter, path: adapter.digest_stable(path),
    ],
    ids=["read_stable", "digest_stable"],
)
def test_path_replaced_by_another_file_before_open_is_changed(
    world: World, read: Callable[[InterleavingMixin, str], object]
) -> None:
    path = world.write("spec.json", b"original")
    other = world.write("other.json", b"impostor")
    adapter = world.interleaving()
    adapter.before_open = lambda _path: os.replace(other, path)

    with pytest.raises(StableReadError) as caught:
        read(adapter, path)

    assert caught.value.failure is ReadFailure.CHANGED


def test_path_replaced_by_a_symlink_before_open_is_refused(world: World) -> None:
    path = world.write("spec.json", b"original")
    target = world.write("elsewhere", b"impostor")

    def swap(_path: str) -> None:
        os.unlink(path)
        os.symlink(target, path)

    adapter = world.interleaving()
    adapter.before_open = swap
    with pytest.raises(StableReadError) as caught:
        adapter.read_stable(path, max_bytes=LIMIT)

    # POSIX: O_NOFOLLOW fails the open. Windows follows the link, and the opened identity is
    # not the one lstat examined.
    expected = ReadFailure.SYMLINK if world.flavour == "posix" else ReadFailure.CHANGED
    assert caught.value.failure is expected


@in_worlds(*POSIX_KINDS)
def test_path_replaced_by_a_fifo_before_open_is_refused_without_blocking(world: World) -> None:
    path = world.write("spec.json", b"original")

    def swap(_path: str) -> None:
        os.unlink(path)
        if world.real:
            os.mkfifo(path)
        else:
            os.mknod(path, stat.S_IFIFO | 0o600)

    adapter = world.interleaving()
    adapter.before_open = swap
    with deadline(5), pytest.raises(StableReadError) as caught:
        adapter.read_stable(path, max_bytes=LIMIT)
    assert caught.value.failure is ReadFailure.NOT_REGULAR
    assert adapter.reads == 0


def test_path_replaced_by_a_directory_before_open_is_refused(world: World) -> None:
    path = world.write("spec.json", b"original")

    def swap(_path: str) -> None:
        os.unlink(path)
        os.mkdir(path)

    refused = refused_unread(
        world, lambda adapter: adapter.read_stable(path, max_bytes=LIMIT), before_open=swap
    )
    assert refused.failure in (ReadFailure.NOT_REGULAR, ReadFailure.UNREADABLE)


def test_path_removed_before_open_is_changed(world: World) -> None:
    path = world.write("spec.json", b"original")
    adapter = world.interleaving()
    adapter.before_open = os.unlink
    with pytest.raises(StableReadError) as caught:
        adapter.read_stable(path, max_bytes=LIMIT)
    assert caught.value.failure is ReadFailure.CHANGED


def test_file_written_between_lstat_and_open_is_changed(world: World) -> None:
    path = world.write("spec.json", b"original")
    world.make_old(path)

    def rewrite(_path: str) -> None:
        with open(path, "r+b") as handle:
            handle.write(b"ORIGINAL")

    adapter = world.interleaving()
    adapter.before_open = rewrite
    with pytest.raises(StableReadError) as caught:
        adapter.read_stable(path, max_bytes=LIMIT)
    assert caught.value.failure is ReadFailure.CHANGED
    assert "mtime" in caught.value.detail


def _during_read(world: World, path: str, change: str) -> StableReadError:
    """Read ``path`` while ``change`` happens to it after the first block was read."""

    def act(block_number: int) -> None:
        if block_number != 2:
            return
        if change == "append":
            with open(path, "ab") as handle:
                handle.write(b"more")
        elif change == "rewrite":
            with open(path, "r+b") as handle:
                handle.write(b"X")
        elif change == "truncate":
            with open(path, "r+b") as handle:
                handle.truncate(1)
        elif change == "chmod":
            os.chmod(path, 0o600)

    adapter = world.interleaving()
    adapter.before_read = act
    with pytest.raises(StableReadError) as caught:
        adapter.read_stable(path, max_bytes=LIMIT)
    return caught.value


def test_file_growing_during_read_is_changed(world: World) -> None:
    error = _during_read(world, world.write("f", b"abc"), "append")
    assert error.failure is ReadFailure.CHANGED
    assert "grew" in error.detail


def test_file_rewritten_in_place_with_the_same_length_is_changed(world: World) -> None:
    path = world.write("f", b"abc")
    world.make_old(path)
    error = _during_read(world, path, "rewrite")
    assert error.failure is ReadFailure.CHANGED
    assert "mtime" in error.detail


def test_file_truncated_during_read_is_changed(world: World) -> None:
    error = _during_read(world, world.write("f", b"abcdef"), "truncate")
    assert error.failure is ReadFailure.CHANGED


@in_worlds(*POSIX_KINDS)  # on Windows st_ctime is the creation time: a chmod does not move it
def test_metadata_change_during_read_is_changed_by_ctime(world: World) -> None:
    path = world.write("f", b"abc")
    os.chmod(path, 0o644)
    error = _during_read(world, path, "chmod")
    assert error.failure is ReadFailure.CHANGED
    assert "ctime" in error.detail


def test_multi_block_read_is_exact(world: World) -> None:
    data = os.urandom(3 * (1 << 20) + 17)
    adapter = world.interleaving()
    read = adapter.read_stable(world.write("f", data), max_bytes=len(data))
    assert read.data == data
    assert adapter.reads == 5  # three full blocks, the tail, and the read that finds the end
