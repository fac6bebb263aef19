"""Contract §5 stable source and artifact reads, against every file-system world: what is
read, what is refused before a byte is read, and the size limit.

Each rule runs against the POSIX adapter on the real file system, the POSIX adapter under
pyfakefs and the Windows adapter under pyfakefs's Windows emulation (see ``_fs_worlds``).
"""

from __future__ import annotations

import errno
import hashlib
import os

import pytest

from application.ports import ReadFailure, StableReadError
from tests.contract._fs_worlds import (
    POSIX_KINDS,
    REAL_KIND,
    WINDOWS_KINDS,
    World,
    deadline,
    in_worlds,
)
from tests.contract.fs_checks import LIMIT, digest_refusal, refusal, refused_unread


def test_regular_file_is_read_exactly_with_its_lowercase_sha256(world: World) -> None:
    data = '{ "goal": "ünïcödé ✓ 🚀" }\r\n'.encode() + bytes(range(256))
    path = world.write("spec.json", data)

    read = world.adapter().read_stable(path, max_bytes=LIMIT)

    assert read.data == data
    assert read.sha256 == hashlib.sha256(data).hexdigest()
    assert read.path == path
    status = os.lstat(path)
    assert (read.identity.device, read.identity.inode) == (status.st_dev, status.st_ino)
    assert read.identity.size == len(data)
    assert read.identity.mtime_ns == status.st_mtime_ns


def test_empty_file_is_read_as_zero_bytes(world: World) -> None:
    read = world.adapter().read_stable(world.write("empty", b""), max_bytes=LIMIT)
    assert read.data == b""
    assert read.sha256 == hashlib.sha256(b"").hexdigest()


def test_file_of_exactly_the_limit_is_read(world: World) -> None:
    data = b"x" * 1000
    assert world.adapter().read_stable(world.write("f", data), max_bytes=1000).data == data


def test_read_small_returns_the_same_bytes_under_the_same_rules(world: World) -> None:
    path = world.write("state.json", b'{"a": 1}')
    assert world.adapter().read_small(path, 100) == b'{"a": 1}'
    link = world.symlink(path, "link.json")
    with pytest.raises(StableReadError) as caught:
        world.adapter().read_small(link, 100)
    assert caught.value.failure is ReadFailure.SYMLINK


def test_parent_directory_symlink_is_allowed(world: World) -> None:
    directory = world.mkdir("real-dir")
    world.write("real-dir/spec.json", b"through a linked parent")
    world.symlink(directory, "linked-dir")

    read = world.adapter().read_stable(world.path("linked-dir/spec.json"), max_bytes=LIMIT)

    assert read.data == b"through a linked parent"


def test_final_symlink_is_refused_as_symlink(world: World) -> None:
    target = world.write("target", b"secret")
    error = refusal(world, world.symlink(target, "link"))
    assert error.failure is ReadFailure.SYMLINK
    assert "secret" not in str(error)


def test_dangling_final_symlink_is_refused_as_symlink(world: World) -> None:
    link = world.symlink(world.path("nowhere"), "dangling")
    assert refusal(world, link).failure is ReadFailure.SYMLINK


def test_directory_is_refused_as_not_regular(world: World) -> None:
    error = refusal(world, world.mkdir("dir"))
    assert error.failure is ReadFailure.NOT_REGULAR
    assert "directory" in error.detail


@in_worlds(*POSIX_KINDS)
def test_fifo_is_refused_without_blocking(world: World) -> None:
    fifo = world.fifo("fifo")
    with deadline(5):
        error = refusal(world, fifo)
        digest_error = digest_refusal(world, fifo)
    assert error.failure is ReadFailure.NOT_REGULAR
    assert digest_error.failure is ReadFailure.NOT_REGULAR
    assert "FIFO" in error.detail


@in_worlds(*POSIX_KINDS)
def test_unix_socket_is_refused_as_not_regular(world: World) -> None:
    error = refusal(world, world.unix_socket("sock"))
    assert error.failure is ReadFailure.NOT_REGULAR
    assert "socket" in error.detail


def test_character_device_is_refused_as_not_regular(world: World) -> None:
    with deadline(5):
        error = refusal(world, world.device())
    assert error.failure is ReadFailure.NOT_REGULAR
    assert "device" in error.detail


def test_missing_file_is_refused_as_missing(world: World) -> None:
    assert refusal(world, world.path("absent")).failure is ReadFailure.MISSING
    assert digest_refusal(world, world.path("absent")).failure is ReadFailure.MISSING


def test_path_beneath_a_regular_file_is_refused_as_missing(world: World) -> None:
    world.write("file", b"x")
    assert refusal(world, world.path("file/child")).failure is ReadFailure.MISSING


@pytest.mark.parametrize("bad", ["relative/spec.json", "spec\x00.json", ""])
def test_non_absolute_or_nul_path_is_refused_as_invalid_path(world: World, bad: str) -> None:
    assert refusal(world, bad).failure is ReadFailure.INVALID_PATH


@in_worlds(*WINDOWS_KINDS)
def test_windows_drive_relative_path_is_refused_as_invalid_path(world: World) -> None:
    assert refusal(world, "C:spec.json").failure is ReadFailure.INVALID_PATH


@in_worlds("windows-fake")
def test_windows_reparse_point_that_is_not_a_symlink_is_refused(world: World) -> None:
    path = world.write("placeholder", b"x")
    world.mark_reparse_point(path)
    error = refusal(world, path)
    assert error.failure is ReadFailure.SYMLINK
    assert "reparse point" in error.detail


@in_worlds("windows-fake")
def test_windows_missing_file_attributes_are_refused_as_uncertain(world: World) -> None:
    path = world.write("f", b"x")
    world.hide_file_attributes(path)
    assert refusal(world, path).failure is ReadFailure.UNREADABLE


@in_worlds("windows-fake")
def test_windows_zero_file_index_is_refused_as_uncertain(world: World) -> None:
    assert world.fake is not None
    path = world.write("f", b"x")
    world.fake.get_object(path).st_ino = 0
    error = refusal(world, path)
    assert error.failure is ReadFailure.UNREADABLE
    assert "file index" in error.detail


def test_permission_denied_at_open_is_refused_as_unreadable(world: World) -> None:
    # Simulated: these tests may run as root, whom permission bits do not stop.
    def deny(path: str) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", path)

    adapter = world.interleaving()
    adapter.before_open = deny
    with pytest.raises(StableReadError) as caught:
        adapter.read_stable(world.write("f", b"x"), max_bytes=LIMIT)
    assert caught.value.failure is ReadFailure.UNREADABLE


def test_io_error_while_reading_is_refused_as_unreadable(world: World) -> None:
    def fail(_block_number: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    adapter = world.interleaving()
    adapter.before_read = fail
    with pytest.raises(StableReadError) as caught:
        adapter.digest_stable(world.write("f", b"x"))
    assert caught.value.failure is ReadFailure.UNREADABLE


def test_file_over_the_limit_is_too_large_with_its_size_and_is_not_read(world: World) -> None:
    path = world.write("big", b"y" * 2000)
    refused = refused_unread(world, lambda adapter: adapter.read_stable(path, max_bytes=1999))
    assert (refused.failure, refused.size) == (ReadFailure.TOO_LARGE, 2000)


@in_worlds(REAL_KIND)  # the emulator would materialise the bytes of the truncated file
def test_sparse_file_far_over_the_limit_is_too_large_without_reading(world: World) -> None:
    path = world.write("sparse", b"")
    os.truncate(path, 10 * (1 << 30))
    refused = refused_unread(world, lambda adapter: adapter.read_stable(path, max_bytes=LIMIT))
    assert refused.size == 10 * (1 << 30)
