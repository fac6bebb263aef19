"""What the parent does with entries a child can change (issue 28), against every file-system
world: ``regular_file`` examines one without reading, following or waiting, and
``reclaim_access`` gives an entry this process owns back the mode a child's ``chmod`` took away,
never through a link.

``reclaim_access`` changes modes on the real POSIX file system only: pyfakefs cannot change a
mode without following a link (it has no ``fchmodat(AT_SYMLINK_NOFOLLOW)``), and Windows has no
owner modes that stop a read, so there it changes nothing, which the port allows.
"""

from __future__ import annotations

import os
import stat

import pytest

from application.ports import ReadFailure, StableReadError
from tests.contract._fs_worlds import POSIX_KINDS, REAL_KIND, World, deadline, in_worlds


def refusal(world: World, path: str) -> StableReadError:
    with pytest.raises(StableReadError) as caught:
        world.adapter().regular_file(path)
    return caught.value


# ---- regular_file ---------------------------------------------------------------------------


def test_regular_file_is_the_identity_of_the_file_without_reading_it(world: World) -> None:
    path = world.write("session.jsonl", b'{"type":"session"}\n')
    identity = world.adapter().regular_file(path)
    status = os.lstat(path)
    assert (identity.device, identity.inode, identity.size) == (
        status.st_dev,
        status.st_ino,
        status.st_size,
    )


def test_regular_file_refuses_a_link_a_directory_and_a_missing_path(world: World) -> None:
    target = world.write("target", b"x")
    assert refusal(world, world.symlink(target, "link")).failure is ReadFailure.SYMLINK
    assert refusal(world, world.mkdir("dir")).failure is ReadFailure.NOT_REGULAR
    assert refusal(world, world.path("absent")).failure is ReadFailure.MISSING


@in_worlds(*POSIX_KINDS)
def test_regular_file_refuses_a_fifo_without_blocking(world: World) -> None:
    fifo = world.fifo("session.jsonl")
    with deadline(5):
        error = refusal(world, fifo)
    assert error.failure is ReadFailure.NOT_REGULAR
    assert "FIFO" in error.detail


# ---- reclaim_access -------------------------------------------------------------------------


def test_reclaim_access_changes_nothing_through_a_link_or_where_nothing_is(world: World) -> None:
    target = world.write("operators-file", b"x")
    os.chmod(target, 0o444)
    before = os.lstat(target).st_mode
    link = world.symlink(target, "link")
    adapter = world.adapter()
    assert adapter.reclaim_access(link, 0o600) is False
    assert os.lstat(target).st_mode == before
    assert adapter.reclaim_access(world.path("absent"), 0o600) is False


def test_reclaim_access_leaves_an_entry_that_has_its_access(world: World) -> None:
    path = world.write("record", b"x")
    os.chmod(path, 0o600)
    before = os.lstat(path)
    assert world.adapter().reclaim_access(path, 0o600) is False
    assert os.lstat(path).st_ctime_ns == before.st_ctime_ns, "not even a chmod"


@in_worlds(REAL_KIND)
@pytest.mark.skipif(os.name == "nt", reason="POSIX owner modes")
@pytest.mark.parametrize(("kind", "wanted"), [("file", 0o600), ("directory", 0o700)])
def test_reclaim_access_gives_back_the_owner_bits_a_chmod_took(
    world: World, kind: str, wanted: int
) -> None:
    path = world.write("record", b"x") if kind == "file" else world.mkdir("ledger")
    os.chmod(path, 0o040)
    assert world.adapter().reclaim_access(path, wanted) is True
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o040 | wanted, "owner bits added, no other"


@in_worlds(REAL_KIND)
@pytest.mark.skipif(os.name == "nt", reason="POSIX owners")
def test_reclaim_access_leaves_another_owners_entry(world: World) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give a file to another owner")
    path = world.write("theirs", b"x")
    os.chmod(path, 0)
    os.chown(path, 65534, 65534)
    assert world.adapter().reclaim_access(path, 0o600) is False
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0
