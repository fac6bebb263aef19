"""The ``Store`` port's contract, run against every implementation the tests rely on.

``memory`` is the port fake (:class:`tests.fakes.store.InMemoryStore`) over the in-memory file
system; ``file-memory`` is :class:`adapters.store.files.FileStore` over the in-memory file
system; ``file-disk`` is the file store on the real file system. The scheduler, operation,
review and mailbox tests run on the fake (tests/integration/conftest.py), so what they prove
holds for the file store only as far as this suite makes the two agree: the pinned task set,
integrity failures, commit visibility, mailboxes, message history, observations, quarantine.
Behaviour of the on-disk format alone (torn lines) is tested for the file store alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

import attrs
import pytest

from adapters.fs.posix import PosixFileSystem
from adapters.store.files import FileStore
from adapters.store.json_records import JsonSquadCodec
from adapters.store.records import encode_message, encode_observation
from application.ports import FileSystem, SquadTransaction, Store
from domain.attestation.grounding import DeliveryObserved, SpawnObserved
from domain.errors import ErrorCode, NotFoundError, RecordError, SquadIntegrityError
from domain.squad.layout import SquadLayout
from domain.squad.messages import MailboxEntry, Message, MessageKind
from domain.squad.model import Squad, Task, TaskStatus
from tests.builders import squad_record, task_record
from tests.fakes.filesystem import InMemoryFileSystem
from tests.fakes.locks import FakeLockFactory
from tests.fakes.store import InMemoryStore, RecordedObservation

SQUAD = "ship-it"
MOMENT = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
KINDS = ["memory", "file-memory", "file-disk"]


def make_squad(squad_id: str = SQUAD, *, task_ids: tuple[str, ...] = ("design", "build")) -> Squad:
    return squad_record(squad_id, created=MOMENT, task_ids=task_ids)


def make_task(task_id: str, *, depends: tuple[str, ...] = ()) -> Task:
    status = TaskStatus.BLOCKED if depends else TaskStatus.PENDING
    return task_record(task_id, status=status, depends=depends, created=MOMENT)


def message(number: int, *, minute: int | None = None) -> Message:
    return Message(
        id=f"m{number}",
        ts=MOMENT + timedelta(minutes=number if minute is None else minute),
        sender="orchestrator",
        kind=MessageKind.TEXT,
        text=f"message {number}",
    )


def entry(number: int, task_id: str = "build", *, minute: int | None = None) -> MailboxEntry:
    return MailboxEntry(
        id=f"m{number}",
        task_id=task_id,
        enqueued_at=MOMENT,
        message=message(number, minute=minute),
    )


@attrs.define
class StoreWorld:
    """A store of one kind and the means to arrange its records behind its back."""

    kind: str
    fs: FileSystem
    root: str
    store: Store

    @property
    def layout(self) -> SquadLayout:
        return SquadLayout(self.root, SQUAD, self.fs.flavour)

    def seed(self, squad: Squad, tasks: list[Task]) -> None:
        if isinstance(self.store, InMemoryStore):
            self.store.seed(squad, tasks)
            return
        codec = JsonSquadCodec()
        layout = SquadLayout(self.root, squad.id, self.fs.flavour)
        self.fs.ensure_dir(layout.squad_dir, 0o700)
        self.fs.write_atomic(layout.squad_file, codec.encode_squad(squad))
        for task in tasks:
            self.fs.ensure_dir(layout.ledger_dir(task.id), 0o700)
            self.fs.ensure_dir(layout.records_dir(task.id), 0o700)
            self.fs.write_atomic(layout.task_file(task.id), codec.encode_task(task))

    def lose_task(self, task_id: str) -> None:
        if isinstance(self.store, InMemoryStore):
            self.store.lose_task(SQUAD, task_id)
        else:
            self.fs.remove_file(self.layout.task_file(task_id))

    def corrupt_task(self, task_id: str) -> None:
        if isinstance(self.store, InMemoryStore):
            self.store.corrupt_task(SQUAD, task_id)
        else:
            self.fs.write_atomic(self.layout.task_file(task_id), b'{"id": ')

    def corrupt_squad(self, squad_id: str = SQUAD) -> None:
        if isinstance(self.store, InMemoryStore):
            self.store.corrupt_squad(squad_id)
        else:
            layout = SquadLayout(self.root, squad_id, self.fs.flavour)
            self.fs.write_atomic(layout.squad_file, b'{"id": ')

    def replace_record(self, task_id: str, task: Task) -> None:
        if isinstance(self.store, InMemoryStore):
            self.store.replace_record(SQUAD, task_id, task)
        else:
            self.fs.write_atomic(self.layout.task_file(task_id), JsonSquadCodec().encode_task(task))


def build_world(kind: str, tmp_path: Path) -> StoreWorld:
    if kind == "file-disk":
        fs: FileSystem = PosixFileSystem()
        root = str(tmp_path / "squads")
        fs.ensure_dir(root, 0o700)
    else:
        memory = InMemoryFileSystem()
        root = memory.add_dir(f"{tmp_path}/squads")
        fs = memory
    locks = FakeLockFactory()
    store: Store
    if kind == "memory":
        store = InMemoryStore(fs=fs, root=root, locks=locks)
    else:
        store = FileStore(fs=fs, locks=locks, root=root)
    built = StoreWorld(kind=kind, fs=fs, root=root, store=store)
    built.seed(make_squad(), [make_task("design"), make_task("build", depends=("design",))])
    return built


@pytest.fixture(params=KINDS)
def world(request: pytest.FixtureRequest, tmp_path: Path) -> StoreWorld:
    return build_world(request.param, tmp_path)


@pytest.fixture(params=["file-memory", "file-disk"])
def file_world(request: pytest.FixtureRequest, tmp_path: Path) -> StoreWorld:
    return build_world(request.param, tmp_path)


def fail_within(store: Store, change: Callable[[SquadTransaction], None]) -> None:
    """A transaction whose body makes ``change`` and then raises ``RuntimeError``."""
    with store.transaction(SQUAD) as tx:
        change(tx)
        raise RuntimeError("boom")


def pinned(world: StoreWorld) -> tuple[str, ...]:
    return world.store.snapshot(SQUAD).squad.task_ids


# -- paths ------------------------------------------------------------------------------------


def test_paths_follow_the_squad_layout(world: StoreWorld) -> None:
    assert world.store.root == world.root
    assert world.store.squad_dir(SQUAD) == world.layout.squad_dir
    assert world.store.task_dir(SQUAD, "build") == world.layout.ledger_dir("build")


@pytest.mark.parametrize("bad", ["../x", "spec", "con", "a/b", ""])
def test_a_task_id_that_cannot_name_a_directory_is_refused(world: StoreWorld, bad: str) -> None:
    with pytest.raises(ValueError, match="cannot name a task directory"):
        world.store.task_dir(SQUAD, bad)


@pytest.mark.parametrize("bad", ["../x", "spec", "con", "a/b", ""])
def test_a_mailbox_of_a_task_id_that_cannot_name_a_directory_is_refused(
    world: StoreWorld, bad: str
) -> None:
    with pytest.raises(ValueError, match="cannot name a task directory"):
        world.store.mailbox(SQUAD, bad)


@pytest.mark.parametrize("bad", ["Upper", "../up", "", "a_b"])
def test_a_malformed_squad_id_is_not_found(world: StoreWorld, bad: str) -> None:
    with pytest.raises(NotFoundError) as caught:
        world.store.squad_dir(bad)
    assert caught.value.code is ErrorCode.SQUAD_NOT_FOUND


@pytest.mark.parametrize("reserved", ["con", "nul", "lpt1", "agents", "knowledge"])
def test_a_reserved_squad_id_is_not_a_squad_id(world: StoreWorld, reserved: str) -> None:
    """Names ``create`` never gives a squad: refused like a malformed id, on every path in."""
    for call in (
        lambda: world.store.squad_dir(reserved),
        lambda: world.store.layout(reserved),
        lambda: world.store.snapshot(reserved),
    ):
        with pytest.raises(NotFoundError) as caught:
            call()
        assert caught.value.code is ErrorCode.SQUAD_NOT_FOUND
        assert caught.value.message.startswith(f"not a squad id: '{reserved}' is reserved: ")


# -- reading ----------------------------------------------------------------------------------


def test_a_snapshot_is_the_squad_and_exactly_its_pinned_tasks(world: StoreWorld) -> None:
    world.seed(make_squad(), [make_task("design"), make_task("build"), make_task("stray")])
    snapshot = world.store.snapshot(SQUAD)
    assert snapshot.squad == make_squad()
    assert sorted(snapshot.tasks) == ["build", "design"], "an unpinned record is ignored"
    assert snapshot.tasks["design"] == make_task("design")


def test_an_absent_squad_is_not_found(world: StoreWorld) -> None:
    for call in (
        lambda: world.store.snapshot("no-such-squad"),
        lambda: world.store.quarantine("no-such-squad", "why"),
    ):
        with pytest.raises(NotFoundError) as caught:
            call()
        assert caught.value.code is ErrorCode.SQUAD_NOT_FOUND
    with pytest.raises(NotFoundError), world.store.transaction("no-such-squad"):
        pass


def test_squads_are_listed_oldest_first(world: StoreWorld) -> None:
    world.seed(attrs.evolve(make_squad("older"), created=MOMENT - timedelta(days=1)), [])
    world.seed(attrs.evolve(make_squad("newer"), created=MOMENT + timedelta(days=1)), [])
    assert world.store.list_squad_ids() == ["older", SQUAD, "newer"]
    records = world.store.list_squads()
    assert [squad.id for squad in records] == ["older", SQUAD, "newer"]
    assert records[1] == world.store.snapshot(SQUAD).squad, "the committed record itself"


def test_a_squad_whose_own_record_is_corrupt_is_unreadable_not_absent(world: StoreWorld) -> None:
    world.seed(attrs.evolve(make_squad("older"), created=MOMENT - timedelta(days=1)), [])
    assert world.store.unreadable_squad_ids() == []
    world.corrupt_squad()
    assert world.store.list_squad_ids() == ["older"]
    assert world.store.unreadable_squad_ids() == [SQUAD]
    with pytest.raises(RecordError) as caught:
        world.store.snapshot(SQUAD)
    assert caught.value.code is ErrorCode.RECORD_CORRUPT
    assert caught.value.message.startswith(f"{world.layout.squad_file}: ")


# -- integrity of the pinned set ---------------------------------------------------------------


def integrity_failure(world: StoreWorld) -> str:
    with pytest.raises(SquadIntegrityError) as caught:
        world.store.snapshot(SQUAD)
    assert caught.value.code is ErrorCode.SQUAD_INTEGRITY
    with pytest.raises(SquadIntegrityError):
        use_in_a_transaction(world.store, dict)  # a transaction never reads past such a task
    return caught.value.message


def use_in_a_transaction(store: Store, use: Callable[[Mapping[str, Task]], object]) -> None:
    with store.transaction(SQUAD) as tx:
        use(tx.tasks)


def test_a_pinned_task_whose_record_is_lost_is_an_integrity_failure(world: StoreWorld) -> None:
    world.lose_task("build")
    message = integrity_failure(world)
    assert "task 'build' is pinned but" in message
    assert "missing" in message


def test_a_pinned_task_whose_record_does_not_decode_is_an_integrity_failure(
    world: StoreWorld,
) -> None:
    world.corrupt_task("build")
    assert "task 'build': " in integrity_failure(world)


def test_a_record_naming_another_task_is_an_integrity_failure(world: StoreWorld) -> None:
    world.replace_record("build", make_task("other"))
    assert "the record of task 'build' names another task" in integrity_failure(world)


def test_a_pinned_task_without_its_ledger_directory_is_an_integrity_failure(
    world: StoreWorld,
) -> None:
    world.fs.remove_tree(world.layout.ledger_dir("build"))
    assert "task 'build' is pinned but its directory is missing" in integrity_failure(world)


def test_a_pinned_id_that_is_not_path_safe_is_an_integrity_failure(world: StoreWorld) -> None:
    world.seed(make_squad(task_ids=("design", "../escape")), [make_task("design")])
    assert "pinned task id '../escape' is not path-safe" in integrity_failure(world)


# A store may keep what it read (the file store caches decoded records): a record changed,
# replaced, deleted or corrupted by another writer after it was read is still seen at once.


def read_everything(world: StoreWorld) -> None:
    world.store.snapshot(SQUAD)
    with world.store.transaction(SQUAD):
        pass


def test_a_record_replaced_by_another_writer_after_a_read_is_seen(world: StoreWorld) -> None:
    read_everything(world)
    changed = attrs.evolve(make_task("design"), status=TaskStatus.FAILED, error="broke")
    world.replace_record("design", changed)
    assert world.store.snapshot(SQUAD).tasks["design"] == changed
    with world.store.transaction(SQUAD) as tx:
        assert tx.tasks["design"] == changed


def test_a_same_size_rewrite_after_a_read_is_seen(world: StoreWorld) -> None:
    read_everything(world)
    codec = JsonSquadCodec()
    renamed = attrs.evolve(make_task("design"), title="Task dezign")
    assert len(codec.encode_task(renamed)) == len(codec.encode_task(make_task("design")))
    world.replace_record("design", renamed)
    assert world.store.snapshot(SQUAD).tasks["design"].title == "Task dezign"


def test_a_record_deleted_after_a_read_is_an_integrity_failure(world: StoreWorld) -> None:
    read_everything(world)
    world.lose_task("build")
    assert "task 'build' is pinned but" in integrity_failure(world)


def test_a_record_corrupted_after_a_read_is_an_integrity_failure(world: StoreWorld) -> None:
    read_everything(world)
    world.corrupt_task("build")
    assert "task 'build': " in integrity_failure(world)
    world.replace_record("build", make_task("build", depends=("design",)))
    assert world.store.snapshot(SQUAD).tasks["build"] == make_task("build", depends=("design",))


def test_a_record_naming_another_task_after_a_read_is_an_integrity_failure(
    world: StoreWorld,
) -> None:
    read_everything(world)
    world.replace_record("build", make_task("other"))
    assert "the record of task 'build' names another task" in integrity_failure(world)


@pytest.mark.parametrize(
    "use",
    [
        lambda tasks: tasks["build"],
        lambda tasks: tasks.get("build"),
        lambda tasks: "build" in tasks,
        lambda tasks: list(tasks.values()),
        dict,
    ],
    ids=["index", "get", "in", "values", "dict"],
)
def test_every_use_of_a_task_that_does_not_load_is_an_integrity_failure(
    world: StoreWorld, use: Callable[[Mapping[str, Task]], object]
) -> None:
    read_everything(world)
    world.lose_task("build")
    with pytest.raises(SquadIntegrityError):
        use_in_a_transaction(world.store, use)


def test_a_file_transaction_reads_only_the_records_it_uses(file_world: StoreWorld) -> None:
    """The file store checks a record when the transaction first uses it: a decision about
    one task neither reads nor waits on the others (each is still checked when used)."""
    world = file_world
    world.lose_task("build")
    started = attrs.evolve(make_task("design"), status=TaskStatus.IN_PROGRESS)
    with world.store.transaction(SQUAD) as tx:
        assert list(tx.tasks) == ["design", "build"]
        assert len(tx.tasks) == 2
        tx.put_task(attrs.evolve(tx.tasks["design"], status=TaskStatus.IN_PROGRESS))
    world.replace_record("build", make_task("build", depends=("design",)))
    assert world.store.snapshot(SQUAD).tasks["design"] == started


def test_a_record_replaced_during_a_file_transaction_is_seen_at_its_first_use(
    file_world: StoreWorld,
) -> None:
    """A writer that ignores the lock (a child without isolation) and replaces a record after
    the transaction began, before the transaction uses it, is seen: the check runs at use."""
    world = file_world
    read_everything(world)
    changed = attrs.evolve(make_task("design"), status=TaskStatus.FAILED, error="forged")
    with world.store.transaction(SQUAD) as tx:
        world.replace_record("design", changed)
        assert tx.tasks["design"] == changed
    with world.store.transaction(SQUAD) as tx:
        world.corrupt_task("build")
        with pytest.raises(SquadIntegrityError):
            tx.tasks.get("build")


def test_quarantine_needs_only_the_squad_record(world: StoreWorld) -> None:
    world.lose_task("build")
    world.store.quarantine(SQUAD, "task set has a gap")
    world.store.quarantine(SQUAD, "task set has a gap")  # the same reason again: no change
    world.replace_record("build", make_task("build", depends=("design",)))  # restored
    assert world.store.snapshot(SQUAD).squad.quarantine == "task set has a gap"
    world.store.quarantine(SQUAD, "canonical spec changed")
    assert world.store.snapshot(SQUAD).squad.quarantine == "canonical spec changed"


# -- transactions ---------------------------------------------------------------------------


def test_changes_are_visible_only_when_the_transaction_commits(world: StoreWorld) -> None:
    design = attrs.evolve(make_task("design"), status=TaskStatus.IN_PROGRESS)
    with world.store.transaction(SQUAD) as tx:
        tx.put_task(design)
        tx.put_squad(attrs.evolve(tx.squad, goal="Ship it today"))
        tx.put_mailbox("build", (entry(1),))
        tx.append_message("build", message(1))
        assert tx.tasks["design"] == design, "the transaction sees its own changes"
        assert tx.mailbox("build") == (entry(1),)
        inside = world.store.snapshot(SQUAD)
        assert inside.tasks["design"].status is TaskStatus.PENDING
        assert inside.squad == make_squad()
        assert world.store.mailbox(SQUAD, "build") == ()
        assert world.store.messages(SQUAD, "build") == []
    after = world.store.snapshot(SQUAD)
    assert after.tasks["design"] == design
    assert after.squad.goal == "Ship it today"
    assert world.store.mailbox(SQUAD, "build") == (entry(1),)
    assert world.store.messages(SQUAD, "build") == [message(1)]


def test_a_transaction_whose_body_raises_commits_nothing(world: StoreWorld) -> None:
    before = world.store.snapshot(SQUAD)

    def change(tx: SquadTransaction) -> None:
        tx.put_task(attrs.evolve(make_task("design"), status=TaskStatus.DONE))
        tx.put_task(make_task("extra"))
        tx.put_squad(attrs.evolve(tx.squad, goal="changed"))
        tx.put_mailbox("build", (entry(1),))
        tx.append_message("build", message(1))

    with pytest.raises(RuntimeError, match="boom"):
        fail_within(world.store, change)
    assert world.store.snapshot(SQUAD) == before
    assert world.store.mailbox(SQUAD, "build") == ()
    assert world.store.messages(SQUAD, "build") == []
    assert not world.fs.exists(world.layout.ledger_dir("extra"))
    with world.store.transaction(SQUAD) as tx:  # the squad's lock was released
        assert tx.squad == before.squad


def test_new_tasks_are_pinned_on_commit_in_the_order_they_were_put(world: StoreWorld) -> None:
    with world.store.transaction(SQUAD) as tx:
        tx.put_task(make_task("zeta"))
        tx.put_task(make_task("alpha", depends=("zeta",)))
        tx.put_task(attrs.evolve(make_task("design"), status=TaskStatus.IN_PROGRESS))
        assert tx.squad.task_ids == ("design", "build"), "pinned at commit, not before"
    assert pinned(world) == ("design", "build", "zeta", "alpha")
    snapshot = world.store.snapshot(SQUAD)
    assert snapshot.tasks["alpha"] == make_task("alpha", depends=("zeta",))
    assert world.fs.is_dir(world.store.task_dir(SQUAD, "zeta")), "its ledger directory exists"


def test_a_transaction_changes_only_its_own_squad(world: StoreWorld) -> None:
    other = make_squad("other", task_ids=())
    world.seed(other, [])
    with pytest.raises(ValueError, match="only its own squad"):
        fail_within(world.store, lambda tx: tx.put_squad(other))
    assert world.store.snapshot("other").squad == other


# -- mailbox and messages ---------------------------------------------------------------------


def test_messages_are_history_plus_unrecorded_mail_sorted_by_time(world: StoreWorld) -> None:
    with world.store.transaction(SQUAD) as tx:
        tx.append_message("build", message(3))
        tx.append_message("build", message(1))
    with world.store.transaction(SQUAD) as tx:
        # m1 is in the history already; m2 only in the mailbox.
        tx.put_mailbox("build", (entry(1), entry(2)))
    assert [m.id for m in world.store.messages(SQUAD, "build")] == ["m1", "m2", "m3"]
    assert world.store.messages(SQUAD, "design") == []


def test_an_unchanged_mailbox_is_not_rewritten_and_mailboxes_are_per_task(
    world: StoreWorld,
) -> None:
    with world.store.transaction(SQUAD) as tx:
        tx.put_mailbox("build", (entry(1),))
    delivered = attrs.evolve(entry(1), delivered_at=MOMENT + timedelta(hours=1))
    with world.store.transaction(SQUAD) as tx:
        assert tx.mailbox("build") == (entry(1),)
        tx.put_mailbox("build", (entry(1),))
        tx.put_mailbox("build", (delivered,))
    assert world.store.mailbox(SQUAD, "build") == (delivered,)
    assert not world.store.mailbox(SQUAD, "build")[0].pending
    assert world.store.mailbox(SQUAD, "design") == ()


# -- observations -----------------------------------------------------------------------------


def test_observations_are_read_back_per_task_in_the_order_recorded(world: StoreWorld) -> None:
    spawn = SpawnObserved(at=MOMENT, child_id="c1")
    delivery = DeliveryObserved(
        at=MOMENT + timedelta(seconds=1),
        child_id="c1",
        session_file="/s.jsonl",
        tool_call_id="call-0",
        index=0,
        chunk_sha256="a" * 64,
    )
    world.store.record_observation(SQUAD, "build", spawn)
    world.store.record_observation(SQUAD, "build", delivery)
    assert world.store.observations(SQUAD, "build") == (spawn, delivery)
    assert world.store.observations(SQUAD, "design") == ()


def test_observations_recorded_after_a_read_are_seen(world: StoreWorld) -> None:
    first = SpawnObserved(at=MOMENT, child_id="c1")
    second = SpawnObserved(at=MOMENT + timedelta(seconds=1), child_id="c2")
    assert world.store.observations(SQUAD, "build") == ()
    world.store.record_observation(SQUAD, "build", first)
    assert world.store.observations(SQUAD, "build") == (first,)
    world.store.record_observation(SQUAD, "build", second)
    assert world.store.observations(SQUAD, "build") == (first, second)


# -- the file store alone: its on-disk format --------------------------------------------------


def test_torn_tail_lines_are_skipped_and_never_swallow_the_next_record(
    file_world: StoreWorld,
) -> None:
    world = file_world
    with world.store.transaction(SQUAD) as tx:
        tx.append_message("build", message(1))
    world.store.record_observation(SQUAD, "build", SpawnObserved(at=MOMENT, child_id="c1"))
    for path, tail in (
        (world.layout.messages_file("build"), encode_message(message(2))[:20]),
        (world.layout.observed_file("build"), b'{"kind":"spawn","at'),
    ):
        world.fs.write_atomic(path, world.fs.read_small(path, 1 << 20) + tail)
    with world.store.transaction(SQUAD) as tx:
        tx.append_message("build", message(3))
    world.store.record_observation(SQUAD, "build", SpawnObserved(at=MOMENT, child_id="c2"))
    assert [m.id for m in world.store.messages(SQUAD, "build")] == ["m1", "m3"]
    assert [o.child_id for o in world.store.observations(SQUAD, "build")] == ["c1", "c2"]


# -- the fake alone: what it records ----------------------------------------------------------


@pytest.fixture
def memory() -> InMemoryStore:
    fs = InMemoryFileSystem()
    store = InMemoryStore(fs=fs, root=fs.add_dir("/squads"))
    store.seed(make_squad(), [make_task("design"), make_task("build", depends=("design",))])
    return store


def test_the_fake_records_each_commit_that_wrote_something(memory: InMemoryStore) -> None:
    with memory.transaction(SQUAD) as tx:
        tx.put_task(make_task("design"))  # unchanged: nothing to write
    assert memory.commits == []
    with memory.transaction(SQUAD) as tx:
        tx.put_task(make_task("extra"))
        tx.put_mailbox("build", (entry(1),))
        tx.append_message("build", message(1))
    (commit,) = memory.commits
    assert commit.squad_id == SQUAD
    assert commit.tasks == (make_task("extra"),)
    assert commit.pinned == ("extra",)
    assert commit.squad is not None
    assert commit.squad.task_ids == ("design", "build", "extra")
    assert commit.mailboxes == {"build": (entry(1),)}
    assert commit.messages == (("build", message(1)),)
    assert memory.history(SQUAD, "build") == (message(1),)


def test_the_fake_records_rollbacks_observations_and_quarantines(memory: InMemoryStore) -> None:
    with pytest.raises(RuntimeError):
        fail_within(memory, lambda tx: tx.put_task(make_task("extra")))
    assert memory.rolled_back == [SQUAD]
    assert memory.commits == []
    spawn = SpawnObserved(at=MOMENT, child_id="c1")
    memory.record_observation(SQUAD, "build", spawn)
    assert memory.recorded == [RecordedObservation(SQUAD, "build", spawn)]
    memory.quarantine(SQUAD, "why")
    memory.quarantine(SQUAD, "why")
    assert memory.quarantines == [(SQUAD, "why")]
    records = memory.records(SQUAD)
    assert records.squad.quarantine == "why"
    assert records.observations == {"build": (spawn,)}


def test_observations_changed_behind_the_stores_back_after_a_read_are_seen(
    file_world: StoreWorld,
) -> None:
    """The file store keeps decoded observations per file identity: a foreign append, a
    same-size replacement and a deletion after a read all show at once."""
    first = SpawnObserved(at=MOMENT, child_id="c1")
    other = SpawnObserved(at=MOMENT, child_id="c9")
    file_world.store.record_observation(SQUAD, "build", first)
    assert file_world.store.observations(SQUAD, "build") == (first,)
    path = file_world.layout.observed_file("build")
    file_world.fs.append_bytes(path, encode_observation(other))
    assert file_world.store.observations(SQUAD, "build") == (first, other)
    file_world.fs.write_atomic(path, encode_observation(other) + encode_observation(first))
    assert file_world.store.observations(SQUAD, "build") == (other, first)
    file_world.fs.remove_file(path)
    assert file_world.store.observations(SQUAD, "build") == ()
