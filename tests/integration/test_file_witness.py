"""``IdentityWitnesses`` (``adapters/fs/witness.py``): a witness holds only while every file
keeps the identity it had, none was changed within the racy window before the witness, and the
wall clock did not step back. Each test makes the change a foreign writer would and checks the
witness no longer holds."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import attrs

from adapters.fs.platform import native_file_system
from adapters.fs.witness import IdentityWitnesses
from tests.fakes.fake_tree import FakeFile
from tests.fakes.filesystem import InMemoryFileSystem

SECOND = 1_000_000_000
FILE = "/squad/build/spec-read-attestation.json"
OTHER = "/squad/.records/build/observed.jsonl"


@attrs.define
class Clocks:
    """A wall and a monotonic clock that move only when the test says so."""

    wall: int
    monotonic: int = 5 * SECOND

    def advance(self, nanoseconds: int) -> None:
        self.wall += nanoseconds
        self.monotonic += nanoseconds


def settled_world() -> tuple[InMemoryFileSystem, Clocks, IdentityWitnesses]:
    fs = InMemoryFileSystem()
    fs.add_file(FILE, b'{"chunks": []}\n')
    fs.add_file(OTHER, b'{"kind": "spawn"}\n')
    clocks = Clocks(wall=_ctime(fs, FILE) + 10 * SECOND)
    return fs, clocks, IdentityWitnesses(fs, lambda: clocks.wall, lambda: clocks.monotonic)


def _ctime(fs: InMemoryFileSystem, path: str) -> int:
    node = fs.nodes[path]
    assert isinstance(node, FakeFile)
    return node.ctime_ns


def test_a_witness_of_settled_files_holds_while_nothing_changes() -> None:
    _fs, clocks, witnesses = settled_world()
    witness = witnesses.witness([FILE, OTHER, "/squad/build/absent"])
    clocks.advance(60 * SECOND)
    assert witnesses.unchanged(witness)


def test_a_replaced_deleted_or_created_file_breaks_the_witness() -> None:
    for change in ("replace", "delete", "create"):
        fs, clocks, witnesses = settled_world()
        witness = witnesses.witness([FILE, OTHER, "/squad/build/absent"])
        if change == "replace":
            fs.write_atomic(OTHER, b'{"kind": "spawn"}\n')  # same bytes, a new file
        elif change == "delete":
            fs.remove_file(FILE)
        else:
            fs.add_file("/squad/build/absent", b"")
        clocks.advance(SECOND)
        assert not witnesses.unchanged(witness), change


def test_a_file_changed_within_the_racy_window_is_never_trusted() -> None:
    fs, clocks, witnesses = settled_world()
    clocks.wall = _ctime(fs, FILE) + 50_000_000  # written 50 ms before the witness
    witness = witnesses.witness([FILE])
    # A rewrite in the same timestamp tick on the same inode: lstat shows nothing new.
    node = fs.nodes[FILE]
    assert isinstance(node, FakeFile)
    node.data = b'{"chunks": [1]}'
    clocks.advance(10 * SECOND)
    assert not witnesses.unchanged(witness)


def test_a_wall_clock_stepped_back_breaks_the_witness() -> None:
    _fs, clocks, witnesses = settled_world()
    witness = witnesses.witness([FILE])
    clocks.monotonic += 10 * SECOND
    clocks.wall += 9 * SECOND  # one second lost: a step back, not a slew
    assert not witnesses.unchanged(witness)
    clocks.wall -= 20 * SECOND  # and behind the witness itself
    assert not witnesses.unchanged(witness)


def test_a_slewed_wall_clock_keeps_the_witness() -> None:
    _fs, clocks, witnesses = settled_world()
    witness = witnesses.witness([FILE])
    clocks.monotonic += 10 * SECOND
    clocks.wall += 10 * SECOND - 5_000_000  # 500 ppm slow
    assert witnesses.unchanged(witness)


def clock_world() -> tuple[InMemoryFileSystem, Clocks, IdentityWitnesses]:
    """Files written just now by the wall clock, on a file system whose clock can be read."""
    fs = InMemoryFileSystem()
    fs.add_file(FILE, b'{"chunks": []}\n')
    fs.add_file(OTHER, b'{"kind": "spawn"}\n')
    fs.change_clock = True
    clocks = Clocks(wall=_ctime(fs, OTHER))
    witnesses = IdentityWitnesses(fs, lambda: clocks.wall, lambda: clocks.monotonic, root="/squad")
    return fs, clocks, witnesses


def test_files_changed_before_the_file_system_clock_moved_on_are_trusted_at_once() -> None:
    fs, _clocks, witnesses = clock_world()
    fs.advance_clock(5)
    witness = witnesses.witness([FILE, OTHER])
    assert witness.clock is not None
    assert witnesses.unchanged(witness), "racy by the wall clock, settled by the file system's"
    fs.append_bytes(OTHER, b'{"kind": "delivery"}\n')
    assert not witnesses.unchanged(witness)


def test_a_file_changed_within_2_ms_of_the_reading_is_not_trusted() -> None:
    _fs, _clocks, witnesses = clock_world()
    witness = witnesses.witness([FILE, OTHER])
    assert witness.clock is not None
    assert not witnesses.unchanged(witness)


def test_a_step_back_of_3_ms_breaks_a_witness_the_file_system_clock_trusted() -> None:
    fs, clocks, witnesses = clock_world()
    fs.advance_clock(5)
    witness = witnesses.witness([FILE, OTHER])
    clocks.advance(60 * SECOND)
    assert witnesses.unchanged(witness)
    clocks.wall -= 3_000_000
    assert not witnesses.unchanged(witness)


def test_another_process_rewriting_a_file_in_place_with_its_old_times_is_seen(
    tmp_path: Path,
) -> None:
    """Same inode, same size, mtime put back with ``utime``: only the ctime tells, and it
    does once the witnessed ctime is settled."""
    path = tmp_path / "spec-read-attestation.json"
    path.write_bytes(b'{"valid": true }\n')
    before = os.stat(path)
    ahead = 10 * SECOND  # the files were written long before this wall clock's "now"
    witnesses = IdentityWitnesses(native_file_system(), lambda: time.time_ns() + ahead)
    witness = witnesses.witness([str(path)])
    assert witnesses.unchanged(witness)
    forge = (
        "import os, sys; p = sys.argv[1]; s = os.stat(p); "
        "fd = os.open(p, os.O_WRONLY); os.write(fd, b'{\"valid\": false}\\n'); os.close(fd); "
        "os.utime(p, ns=(s.st_atime_ns, s.st_mtime_ns))"
    )
    time.sleep(0.01)  # past the timestamp granularity of the file system
    subprocess.run([sys.executable, "-c", forge, str(path)], check=True)
    after = os.stat(path)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )
    assert not witnesses.unchanged(witness)
