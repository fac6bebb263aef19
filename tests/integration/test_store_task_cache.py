"""The file store's cache of decoded task records (``adapters/store/task_cache.py``).

A snapshot re-reads a ``task.json`` only when one ``lstat`` shows another identity, and only
once its ctime is old enough that a later write cannot have the same one ("settled"); a record
read within that window is read again every time, and only its decoding is skipped when its
bytes are the same. The contract suite (tests/contract/store/) checks that
records replaced, rewritten, deleted or corrupted after a read are seen; this file checks the
two paths of the cache themselves on the in-memory file system.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path

import attrs
import pytest

from adapters.fs.change_clock import ChangeClock
from adapters.fs.platform import native_file_system
from adapters.store.files import FileStore
from adapters.store.json_records import CorruptRecord, JsonSquadCodec
from adapters.store.records import encode_mailbox
from adapters.store.task_cache import CHANGED_RETRIES, RecordCache
from application.ports import ReadFailure, StableReadError
from domain.errors import NotFoundError, SquadIntegrityError
from domain.squad.messages import MailboxEntry, Message, MessageKind
from tests.builders import squad_record, task_record
from tests.fakes.fake_tree import FakeFile
from tests.fakes.faulting_filesystem import RecordingFileSystem
from tests.fakes.filesystem import InMemoryFileSystem
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
    # One fake for both clocks: they advance together, as they do but for a step.
    return FileStore(fs=fs, locks=FakeLockFactory(), root=ROOT, wall_ns=clock, monotonic_ns=clock)


def wall_clock_only(fs: InMemoryFileSystem) -> ChangeClock:
    clock = WallClock()
    return ChangeClock(fs, None, clock, clock)


SETTLED = 10 * SECOND  # long enough after a write that a later one cannot share its ctime
JUST_WRITTEN = 0


def store_at(
    fs: InMemoryFileSystem, path: str, after_change_ns: int
) -> tuple[FileStore, WallClock]:
    """A store whose clocks stand ``after_change_ns`` after ``path`` last changed."""
    clock = WallClock(file_at(fs, path).ctime_ns + after_change_ns)
    return store_on(fs, clock), clock


def reads_of(fs: InMemoryFileSystem, path: str) -> int:
    """How many times ``path`` was read whole (a look that finds it unchanged is one lstat)."""
    return sum(call.path == path for call in fs.calls_of("read_stable"))


def file_at(fs: InMemoryFileSystem, path: str) -> FakeFile:
    found = fs.nodes[path]
    assert isinstance(found, FakeFile)
    return found


def rewrite_in_place(fs: InMemoryFileSystem, title: str) -> None:
    """Same size, same inode, same times: what a rewrite on a reused inode within one
    timestamp tick looks like to ``lstat``."""
    record = file_at(fs, RECORD)
    changed = JsonSquadCodec().encode_task(task_record("build", title=title))
    assert len(changed) == len(record.data)
    record.data = changed


def test_a_settled_record_is_not_read_again_while_its_identity_holds(
    fs: InMemoryFileSystem,
) -> None:
    store, clock = store_at(fs, RECORD, SETTLED)
    store.snapshot(SQUAD)
    store.snapshot(SQUAD)
    with store.transaction(SQUAD):
        pass
    assert reads_of(fs, RECORD) == 1, "one read, then one lstat per snapshot"
    fs.write_atomic(RECORD, JsonSquadCodec().encode_task(task_record("build", title="Task bxild")))
    clock.now_ns = file_at(fs, RECORD).ctime_ns + SETTLED
    assert store.snapshot(SQUAD).tasks["build"].title == "Task bxild"
    assert reads_of(fs, RECORD) == 2


def test_a_racy_record_is_read_again_so_an_identical_identity_hides_nothing(
    fs: InMemoryFileSystem,
) -> None:
    store, _ = store_at(fs, RECORD, JUST_WRITTEN)
    assert store.snapshot(SQUAD).tasks["build"].title == "Task build"
    rewrite_in_place(fs, "Task bxild")
    assert store.snapshot(SQUAD).tasks["build"].title == "Task bxild"
    assert reads_of(fs, RECORD) == 2


def test_a_racy_record_becomes_trusted_once_a_read_finds_it_settled(
    fs: InMemoryFileSystem,
) -> None:
    store, clock = store_at(fs, RECORD, JUST_WRITTEN)
    store.snapshot(SQUAD)
    store.snapshot(SQUAD)
    assert reads_of(fs, RECORD) == 2, "racy: read each time"
    clock.now_ns += SETTLED
    store.snapshot(SQUAD)
    store.snapshot(SQUAD)
    assert reads_of(fs, RECORD) == 3, "read once more, settled, then trusted on its identity"


def test_a_whole_second_ctime_is_racy_for_two_seconds(fs: InMemoryFileSystem) -> None:
    record = file_at(fs, RECORD)
    record.mtime_ns = record.ctime_ns = 100 * SECOND  # a file system keeping whole seconds
    clock = WallClock(100 * SECOND + SECOND)
    store = store_on(fs, clock)
    store.snapshot(SQUAD)
    rewrite_in_place(fs, "Task bxild")
    assert store.snapshot(SQUAD).tasks["build"].title == "Task bxild"


def title_in_a_transaction(store: FileStore) -> str:
    with store.transaction(SQUAD) as tx:
        return tx.tasks["build"].title


def test_in_a_transaction_a_record_older_than_the_file_system_clock_s_reading_is_trusted(
    fs: InMemoryFileSystem,
) -> None:
    """Racy by the wall clock (written just now), but the file system's clock has moved on
    since: one read, then trusted on its identity (git's racy rule)."""
    fs.change_clock = True
    store, _ = store_at(fs, RECORD, JUST_WRITTEN)
    fs.advance_clock(5)
    title_in_a_transaction(store)
    title_in_a_transaction(store)
    title_in_a_transaction(store)
    assert reads_of(fs, RECORD) == 1
    assert fs.calls_of("clock_reading"), "the transaction read the clock"


def test_a_record_changed_within_2_ms_of_the_reading_is_read_again(
    fs: InMemoryFileSystem,
) -> None:
    """The reading may share the record's tick: a rewrite in place (same identity) is seen."""
    fs.change_clock = True
    store, _ = store_at(fs, RECORD, JUST_WRITTEN)
    assert title_in_a_transaction(store) == "Task build"
    rewrite_in_place(fs, "Task bxild")
    assert title_in_a_transaction(store) == "Task bxild"
    assert reads_of(fs, RECORD) == 2


def test_a_wall_clock_stepped_back_voids_what_the_file_system_clock_trusted(
    fs: InMemoryFileSystem,
) -> None:
    fs.change_clock = True
    wall, monotonic = WallClock(file_at(fs, RECORD).ctime_ns), WallClock(5 * SECOND)
    store = FileStore(
        fs=fs, locks=FakeLockFactory(), root=ROOT, wall_ns=wall, monotonic_ns=monotonic
    )
    fs.advance_clock(5)
    title_in_a_transaction(store)
    title_in_a_transaction(store)
    assert reads_of(fs, RECORD) == 1
    wall.now_ns += SECOND
    monotonic.now_ns += SECOND
    assert title_in_a_transaction(store) == "Task build"
    assert reads_of(fs, RECORD) == 1, "a second on both clocks: still trusted"
    wall.now_ns -= 3_000_000  # a later change may now carry the record's own ctime
    rewrite_in_place(fs, "Task bxild")
    assert title_in_a_transaction(store) == "Task bxild"


def test_a_lock_free_read_takes_no_clock_reading(fs: InMemoryFileSystem) -> None:
    """Reading the clock touches a file; read-only commands (status, watch) move nothing."""
    fs.change_clock = True
    store, _ = store_at(fs, RECORD, JUST_WRITTEN)
    store.snapshot(SQUAD)
    store.mailbox(SQUAD, "build")
    assert fs.calls_of("clock_reading") == []
    assert not fs.exists(f"{ROOT}/.fs-clock")
    title_in_a_transaction(store)
    assert fs.exists(f"{ROOT}/.fs-clock")


@pytest.mark.skipif(os.name != "posix", reason="Windows takes no change-clock readings")
def test_on_the_real_file_system_a_transaction_trusts_a_record_once_its_clock_moved_on(
    tmp_path: Path,
) -> None:
    """The same rule with the real adapter: the wall clock calls the record racy throughout;
    the file system's own clock, read by touching ``<root>/.fs-clock``, settles it."""
    codec = JsonSquadCodec()
    root = tmp_path / "squads"
    (root / SQUAD / "build").mkdir(parents=True)
    (root / SQUAD / "squad.json").write_bytes(
        codec.encode_squad(squad_record(SQUAD, task_ids=("build",)))
    )
    record = root / SQUAD / ".records" / "build" / "task.json"
    record.parent.mkdir(parents=True)
    record.write_bytes(codec.encode_task(task_record("build")))
    recording = RecordingFileSystem(native_file_system())
    wall = WallClock(record.stat().st_ctime_ns)  # "just written", for as long as the test runs
    store = FileStore(
        fs=recording, locks=FakeLockFactory(), root=str(root), wall_ns=wall, monotonic_ns=wall
    )
    time.sleep(0.02)  # past any kernel tick and the 2 ms margin
    for _ in range(3):
        with store.transaction(SQUAD) as tx:
            assert tx.tasks["build"].title == "Task build"
    reads = [call for call in recording.calls if call.operation == "read_stable"]
    assert [call.path for call in reads].count(str(record)) == 1
    assert (root / ".fs-clock").is_file()


def test_a_cached_record_replaced_by_a_symlink_is_refused(fs: InMemoryFileSystem) -> None:
    store, _ = store_at(fs, RECORD, SETTLED)
    store.snapshot(SQUAD)
    fs.add_file(f"{ROOT}/elsewhere.json", file_at(fs, RECORD).data)
    del fs.nodes[RECORD]
    fs.add_symlink(RECORD, f"{ROOT}/elsewhere.json")
    with pytest.raises(SquadIntegrityError, match="cannot be read"):
        store.snapshot(SQUAD)


# -- squad.json goes through the same cache ------------------------------------------------------

SQUAD_RECORD = f"{ROOT}/{SQUAD}/squad.json"


def test_a_settled_squad_record_is_read_once_and_a_replacement_is_seen(
    fs: InMemoryFileSystem,
) -> None:
    store, _ = store_at(fs, SQUAD_RECORD, SETTLED)
    store.snapshot(SQUAD)
    with store.transaction(SQUAD):
        pass
    assert reads_of(fs, SQUAD_RECORD) == 1, "one read, then one lstat per load"
    changed = attrs.evolve(squad_record(SQUAD, task_ids=("build",)), goal="Another goal.")
    fs.write_atomic(SQUAD_RECORD, JsonSquadCodec().encode_squad(changed))
    with store.transaction(SQUAD) as tx:
        assert tx.squad.goal == "Another goal."
    assert reads_of(fs, SQUAD_RECORD) == 2


def test_a_racy_squad_record_rewritten_in_place_is_seen(fs: InMemoryFileSystem) -> None:
    store, _ = store_at(fs, SQUAD_RECORD, JUST_WRITTEN)
    original = squad_record(SQUAD, task_ids=("build",))
    assert store.snapshot(SQUAD).squad == original
    changed = JsonSquadCodec().encode_squad(attrs.evolve(original, goal=original.goal[::-1]))
    assert len(changed) == len(file_at(fs, SQUAD_RECORD).data)
    file_at(fs, SQUAD_RECORD).data = changed  # same inode, size and times
    assert store.snapshot(SQUAD).squad.goal == original.goal[::-1]


def test_a_cached_squad_record_deleted_or_corrupted_is_seen(fs: InMemoryFileSystem) -> None:
    store, _ = store_at(fs, SQUAD_RECORD, SETTLED)
    store.snapshot(SQUAD)
    fs.write_atomic(SQUAD_RECORD, b'{"id": ')
    with pytest.raises(CorruptRecord):
        store.snapshot(SQUAD)
    fs.remove_file(SQUAD_RECORD)
    with pytest.raises(NotFoundError):
        store.snapshot(SQUAD)


# -- mailbox.json goes through the same cache (every reconcile pass reads every task's) ----------

MAILBOX = f"{ROOT}/{SQUAD}/.records/build/mailbox.json"


def mail(text: str) -> tuple[MailboxEntry, ...]:
    at = datetime(2026, 12, 3, 8, 0, tzinfo=UTC)
    message = Message(id="m" * 32, ts=at, sender="orchestrator", kind=MessageKind.TEXT, text=text)
    return (MailboxEntry(id="e" * 32, task_id="build", enqueued_at=at, message=message),)


def test_a_missing_mailbox_costs_no_read_and_one_written_later_is_seen(
    fs: InMemoryFileSystem,
) -> None:
    store = store_on(fs, WallClock(10 * SECOND))
    assert store.mailbox(SQUAD, "build") == ()
    assert reads_of(fs, MAILBOX) == 0, "one lstat says there is nothing to read"
    fs.write_atomic(MAILBOX, encode_mailbox(mail("Also update the docs.")))
    assert store.mailbox(SQUAD, "build") == mail("Also update the docs.")


def test_a_settled_mailbox_is_read_once_and_a_foreign_replacement_or_removal_is_seen(
    fs: InMemoryFileSystem,
) -> None:
    fs.write_atomic(MAILBOX, encode_mailbox(mail("first")))
    store, _ = store_at(fs, MAILBOX, SETTLED)
    with store.transaction(SQUAD) as tx:
        assert tx.mailbox("build") == mail("first")
    assert store.mailbox(SQUAD, "build") == mail("first")
    assert reads_of(fs, MAILBOX) == 1, "one read, then one lstat per look"
    fs.write_atomic(MAILBOX, encode_mailbox(mail("other")))  # another process's send
    assert store.mailbox(SQUAD, "build") == mail("other")
    fs.remove_file(MAILBOX)
    assert store.mailbox(SQUAD, "build") == ()


def test_a_racy_mailbox_rewritten_in_place_is_seen(fs: InMemoryFileSystem) -> None:
    fs.write_atomic(MAILBOX, encode_mailbox(mail("first")))
    store, _ = store_at(fs, MAILBOX, JUST_WRITTEN)
    assert store.mailbox(SQUAD, "build") == mail("first")
    changed = encode_mailbox(mail("tsrif"))
    assert len(changed) == len(file_at(fs, MAILBOX).data)
    file_at(fs, MAILBOX).data = changed  # same inode, size and times
    assert store.mailbox(SQUAD, "build") == mail("tsrif")


def test_a_cached_mailbox_corrupted_is_refused(fs: InMemoryFileSystem) -> None:
    fs.write_atomic(MAILBOX, encode_mailbox(mail("first")))
    store, _ = store_at(fs, MAILBOX, SETTLED)
    store.mailbox(SQUAD, "build")
    fs.write_atomic(MAILBOX, b"[{")
    with pytest.raises(CorruptRecord):
        store.mailbox(SQUAD, "build")


def _replaced_while_read() -> StableReadError:
    return StableReadError(ReadFailure.CHANGED, RECORD, "ctime changed while it was read")


def test_a_record_replaced_while_it_was_read_is_read_again(fs: InMemoryFileSystem) -> None:
    """Another process's atomic rename unlinks the inode being read (its ctime moves): a
    reader without the squad lock (``watch``) reads the whole replacement instead of calling
    the squad tampered with."""
    cache: RecordCache[bytes] = RecordCache(fs, wall_clock_only(fs))
    for call in range(1, CHANGED_RETRIES + 1):
        fs.fail("read_stable", call=call, error=_replaced_while_read())
    assert cache.load(RECORD, 1 << 20, bytes) == file_at(fs, RECORD).data
    assert reads_of(fs, RECORD) == CHANGED_RETRIES + 1


def test_a_record_that_keeps_changing_still_fails(fs: InMemoryFileSystem) -> None:
    cache: RecordCache[bytes] = RecordCache(fs, wall_clock_only(fs))
    for call in range(1, CHANGED_RETRIES + 2):
        fs.fail("read_stable", call=call, error=_replaced_while_read())
    with pytest.raises(StableReadError) as refused:
        cache.load(RECORD, 1 << 20, bytes)
    assert refused.value.failure is ReadFailure.CHANGED
    assert reads_of(fs, RECORD) == CHANGED_RETRIES + 1


def test_other_refusals_are_not_retried(fs: InMemoryFileSystem) -> None:
    cache: RecordCache[bytes] = RecordCache(fs, wall_clock_only(fs))
    fs.fail("read_stable", error=StableReadError(ReadFailure.SYMLINK, RECORD, "a symlink"))
    with pytest.raises(StableReadError):
        cache.load(RECORD, 1 << 20, bytes)
    assert reads_of(fs, RECORD) == 1
