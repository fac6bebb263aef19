"""The file store's cache of decoded task records (``adapters/store_task_cache.py``).

A snapshot re-reads a ``task.json`` only when one ``lstat`` shows another identity, and only
once its ctime is old enough that a later write cannot have the same one ("settled"); a record
read within that window is read again every time, and only its decoding is skipped when its
bytes are the same. The contract suite (tests/contract/test_store_contract.py) checks that
records replaced, rewritten, deleted or corrupted after a read are seen; this file checks the
two paths of the cache themselves on the in-memory file system.
"""

from __future__ import annotations

import attrs
import pytest

from adapters.store_files import FileStore
from adapters.store_json import CorruptRecord, JsonSquadCodec
from domain.errors import NotFoundError, SquadIntegrityError
from tests.builders import squad_record, task_record
from tests.fakes.filesystem import FakeFile, InMemoryFileSystem
from tests.fakes.locks import FakeLockFactory

ROOT = "/squads"
SQUAD = "ship-it"
RECORD = f"{ROOT}/{SQUAD}/.records/build/task.json"
SECOND = 1_000_000_000


@attrs.define
class WallClock:
    now_ns: int = 0

    def __call__(self) -> int:
        return self.now_ns


@pytest.fixture
def fs() -> InMemoryFileSystem:
    codec = JsonSquadCodec()
    memory = InMemoryFileSystem()
    memory.add_file(
        f"{ROOT}/{SQUAD}/squad.json", codec.encode_squad(squad_record(SQUAD, task_ids=("build",)))
    )
    memory.add_dir(f"{ROOT}/{SQUAD}/build")
    memory.add_file(RECORD, codec.encode_task(task_record("build")))
    return memory


def store_on(fs: InMemoryFileSystem, clock: WallClock) -> FileStore:
    return FileStore(fs=fs, locks=FakeLockFactory(), root=ROOT, wall_ns=clock)


def record_reads(fs: InMemoryFileSystem) -> int:
    return sum(call.path == RECORD for call in fs.calls_of("read_stable"))


def node(fs: InMemoryFileSystem) -> FakeFile:
    found = fs.nodes[RECORD]
    assert isinstance(found, FakeFile)
    return found


def rewrite_in_place(fs: InMemoryFileSystem, title: str) -> None:
    """Same size, same inode, same times: what a rewrite on a reused inode within one
    timestamp tick looks like to ``lstat``."""
    record = node(fs)
    changed = JsonSquadCodec().encode_task(task_record("build", title=title))
    assert len(changed) == len(record.data)
    record.data = changed


def test_a_settled_record_is_not_read_again_while_its_identity_holds(
    fs: InMemoryFileSystem,
) -> None:
    clock = WallClock(node(fs).ctime_ns + 10 * SECOND)
    store = store_on(fs, clock)
    store.snapshot(SQUAD)
    store.snapshot(SQUAD)
    with store.transaction(SQUAD):
        pass
    assert record_reads(fs) == 1, "one read, then one lstat per snapshot"
    fs.write_atomic(RECORD, JsonSquadCodec().encode_task(task_record("build", title="Task bxild")))
    clock.now_ns = node(fs).ctime_ns + 10 * SECOND
    assert store.snapshot(SQUAD).tasks["build"].title == "Task bxild"
    assert record_reads(fs) == 2


def test_a_racy_record_is_read_again_so_an_identical_identity_hides_nothing(
    fs: InMemoryFileSystem,
) -> None:
    clock = WallClock(node(fs).ctime_ns)  # the record was written just now
    store = store_on(fs, clock)
    assert store.snapshot(SQUAD).tasks["build"].title == "Task build"
    rewrite_in_place(fs, "Task bxild")
    assert store.snapshot(SQUAD).tasks["build"].title == "Task bxild"
    assert record_reads(fs) == 2


def test_a_racy_record_becomes_trusted_once_a_read_finds_it_settled(
    fs: InMemoryFileSystem,
) -> None:
    clock = WallClock(node(fs).ctime_ns)
    store = store_on(fs, clock)
    store.snapshot(SQUAD)
    store.snapshot(SQUAD)
    assert record_reads(fs) == 2, "racy: read each time"
    clock.now_ns += 10 * SECOND
    store.snapshot(SQUAD)
    store.snapshot(SQUAD)
    assert record_reads(fs) == 3, "read once more, settled, then trusted on its identity"


def test_a_whole_second_ctime_is_racy_for_two_seconds(fs: InMemoryFileSystem) -> None:
    record = node(fs)
    record.mtime_ns = record.ctime_ns = 100 * SECOND  # a file system keeping whole seconds
    clock = WallClock(100 * SECOND + SECOND)
    store = store_on(fs, clock)
    store.snapshot(SQUAD)
    rewrite_in_place(fs, "Task bxild")
    assert store.snapshot(SQUAD).tasks["build"].title == "Task bxild"


def test_a_cached_record_replaced_by_a_symlink_is_refused(fs: InMemoryFileSystem) -> None:
    clock = WallClock(node(fs).ctime_ns + 10 * SECOND)
    store = store_on(fs, clock)
    store.snapshot(SQUAD)
    fs.add_file(f"{ROOT}/elsewhere.json", node(fs).data)
    del fs.nodes[RECORD]
    fs.add_symlink(RECORD, f"{ROOT}/elsewhere.json")
    with pytest.raises(SquadIntegrityError, match="cannot be read"):
        store.snapshot(SQUAD)


# -- squad.json goes through the same cache ------------------------------------------------------

SQUAD_RECORD = f"{ROOT}/{SQUAD}/squad.json"


def squad_node(fs: InMemoryFileSystem) -> FakeFile:
    found = fs.nodes[SQUAD_RECORD]
    assert isinstance(found, FakeFile)
    return found


def squad_reads(fs: InMemoryFileSystem) -> int:
    return sum(call.path == SQUAD_RECORD for call in fs.calls_of("read_stable"))


def test_a_settled_squad_record_is_read_once_and_a_replacement_is_seen(
    fs: InMemoryFileSystem,
) -> None:
    clock = WallClock(squad_node(fs).ctime_ns + 10 * SECOND)
    store = store_on(fs, clock)
    store.snapshot(SQUAD)
    with store.transaction(SQUAD):
        pass
    assert squad_reads(fs) == 1, "one read, then one lstat per load"
    changed = attrs.evolve(squad_record(SQUAD, task_ids=("build",)), goal="Another goal.")
    fs.write_atomic(SQUAD_RECORD, JsonSquadCodec().encode_squad(changed))
    with store.transaction(SQUAD) as tx:
        assert tx.squad.goal == "Another goal."
    assert squad_reads(fs) == 2


def test_a_racy_squad_record_rewritten_in_place_is_seen(fs: InMemoryFileSystem) -> None:
    clock = WallClock(squad_node(fs).ctime_ns)  # written just now
    store = store_on(fs, clock)
    original = squad_record(SQUAD, task_ids=("build",))
    assert store.snapshot(SQUAD).squad == original
    changed = JsonSquadCodec().encode_squad(attrs.evolve(original, goal=original.goal[::-1]))
    assert len(changed) == len(squad_node(fs).data)
    squad_node(fs).data = changed  # same inode, size and times
    assert store.snapshot(SQUAD).squad.goal == original.goal[::-1]


def test_a_cached_squad_record_deleted_or_corrupted_is_seen(fs: InMemoryFileSystem) -> None:
    clock = WallClock(squad_node(fs).ctime_ns + 10 * SECOND)
    store = store_on(fs, clock)
    store.snapshot(SQUAD)
    fs.write_atomic(SQUAD_RECORD, b'{"id": ')
    with pytest.raises(CorruptRecord):
        store.snapshot(SQUAD)
    fs.remove_file(SQUAD_RECORD)
    with pytest.raises(NotFoundError):
        store.snapshot(SQUAD)
