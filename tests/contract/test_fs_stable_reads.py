"""Contract §5 stable source and artifact reads, against every file-system world.

Each rule runs against the POSIX adapter on the real file system, the POSIX adapter under
pyfakefs and the Windows adapter under pyfakefs's Windows emulation (see ``_fs_worlds``).
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import tracemalloc
from collections.abc import Callable

import pytest

from application.ports import ReadFailure, StableReadError
from tests.contract._fs_worlds import (
    POSIX_KINDS,
    REAL_KIND,
    WINDOWS_KINDS,
    InterleavingMixin,
    World,
    deadline,
    in_worlds,
)

LIMIT = 1 << 20


def refusal(world: World, path: str, *, max_bytes: int = LIMIT) -> StableReadError:
    with pytest.raises(StableReadError) as caught:
        world.adapter().read_stable(path, max_bytes=max_bytes)
    return caught.value


def refused_unread(
    world: World,
    read: Callable[[InterleavingMixin], object],
    *,
    before_open: Callable[[str], None] | None = None,
) -> StableReadError:
    """What ``read`` through an interleaving adapter is refused with; not a byte may be read."""
    adapter = world.interleaving()
    adapter.before_open = before_open
    with pytest.raises(StableReadError) as caught:
        read(adapter)
    assert adapter.reads == 0
    return caught.value


def digest_refusal(world: World, path: str) -> StableReadError:
    with pytest.raises(StableReadError) as caught:
        world.adapter().digest_stable(path)
    return caught.value


# ---- what is read -------------------------------------------------------------------------


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


# ---- what is refused at lstat time ------------------------------------------------------------


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


# ---- size ----------------------------------------------------------------------------------


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


# ---- the path changes between lstat and open ----------------------------------------------------


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


# ---- the file changes while it is read --------------------------------------------------------


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


# ---- digest_stable ------------------------------------------------------------------------


def test_digest_of_a_multi_mebibyte_file_is_its_sha256_and_length(world: World) -> None:
    data = os.urandom(3 * (1 << 20) + 17)
    digest = world.adapter().digest_stable(world.write("f", data))
    assert digest.sha256 == hashlib.sha256(data).hexdigest()
    assert digest.size == len(data)
    assert digest.identity.size == len(data)


def test_digest_refuses_final_symlink_and_directory(world: World) -> None:
    target = world.write("target", b"x")
    assert digest_refusal(world, world.symlink(target, "link")).failure is ReadFailure.SYMLINK
    assert digest_refusal(world, world.mkdir("d")).failure is ReadFailure.NOT_REGULAR


def test_digest_refuses_a_file_that_grows_while_hashed(world: World) -> None:
    path = world.write("f", b"x" * ((1 << 20) + 5))

    def grow(block_number: int) -> None:
        if block_number == 2:
            with open(path, "ab") as handle:
                handle.write(b"more")

    adapter = world.interleaving()
    adapter.before_read = grow
    with pytest.raises(StableReadError) as caught:
        adapter.digest_stable(path)
    assert caught.value.failure is ReadFailure.CHANGED


@pytest.mark.slow
@in_worlds(REAL_KIND)  # the emulator keeps contents in memory, so memory would say nothing
def test_digest_streams_a_64_mib_file_in_bounded_memory(world: World) -> None:
    size = 64 * (1 << 20)
    path = world.write("big", b"head")
    os.truncate(path, size)  # sparse: cheap to create, still 64 MiB to read and hash
    expected = hashlib.sha256(b"head" + bytes(size - 4)).hexdigest()

    tracemalloc.start()
    try:
        digest = world.adapter().digest_stable(path)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert digest.sha256 == expected
    assert digest.size == size
    assert peak < 8 * (1 << 20)


# ---- digest_stable with an expected size (red-team issue 11, finding 2) -------------------------


def test_digest_of_a_file_of_another_size_is_refused_before_any_read(world: World) -> None:
    path = world.write("f", b"y" * 2000)
    refused = refused_unread(world, lambda adapter: adapter.digest_stable(path, expected_size=12))
    assert (refused.failure, refused.size) == (ReadFailure.SIZE_MISMATCH, 2000)


def test_digest_of_a_file_of_the_expected_size_is_its_sha256(world: World) -> None:
    data = b"y" * 2000
    digest = world.adapter().digest_stable(world.write("f", data), expected_size=len(data))
    assert (digest.size, digest.sha256) == (len(data), hashlib.sha256(data).hexdigest())


@in_worlds(REAL_KIND)  # the emulator would materialise the bytes of the truncated file
def test_a_20_gib_sparse_file_declared_small_is_refused_without_reading(world: World) -> None:
    path = world.write("sparse", b"")
    os.truncate(path, 20 * (1 << 30))
    adapter = world.interleaving()

    with pytest.raises(StableReadError) as caught:
        adapter.digest_stable(path, expected_size=12)

    assert caught.value.failure is ReadFailure.SIZE_MISMATCH
    assert caught.value.size == 20 * (1 << 30)
    assert adapter.reads == 0
