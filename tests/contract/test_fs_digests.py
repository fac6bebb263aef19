"""Contract §5 ``digest_stable``, in every file-system world: the digest of what was read, the
same refusals as a read, a file that grows while hashed, and a declared size checked first."""

from __future__ import annotations

import hashlib
import os
import tracemalloc

import pytest

from application.ports import ReadFailure, StableReadError
from tests.contract._fs_worlds import REAL_KIND, World, in_worlds
from tests.contract.fs_checks import digest_refusal, refused_unread


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
