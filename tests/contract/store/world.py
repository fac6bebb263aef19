"""The worlds the ``Store`` port's contract runs in, and the means to arrange their records.

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

from adapters.store.files import FileStore
from adapters.store.json_records import JsonSquadCodec
from application.ports import FileSystem, SquadTransaction, Store
from domain.errors import ErrorCode, SquadIntegrityError
from domain.squad.layout import SquadLayout
from domain.squad.messages import MailboxEntry, Message, MessageKind
from domain.squad.model import Squad, Task, TaskStatus
from tests.builders import squad_record, task_record
from tests.contract.store_kinds import store_file_system
from tests.fakes.locks import FakeLockFactory
from tests.fakes.store import InMemoryStore

SQUAD = "ship-it"
MOMENT = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


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
    fs, root = store_file_system(kind, tmp_path / "squads")
    locks = FakeLockFactory()
    store: Store
    if kind == "memory":
        store = InMemoryStore(fs=fs, root=root, locks=locks)
    else:
        store = FileStore(fs=fs, locks=locks, root=root)
    built = StoreWorld(kind=kind, fs=fs, root=root, store=store)
    built.seed(make_squad(), [make_task("design"), make_task("build", depends=("design",))])
    return built


def fail_within(store: Store, change: Callable[[SquadTransaction], None]) -> None:
    """A transaction whose body makes ``change`` and then raises ``RuntimeError``."""
    with store.transaction(SQUAD) as tx:
        change(tx)
        raise RuntimeError("boom")


def pinned(world: StoreWorld) -> tuple[str, ...]:
    return world.store.snapshot(SQUAD).squad.task_ids


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


def read_everything(world: StoreWorld) -> None:
    world.store.snapshot(SQUAD)
    with world.store.transaction(SQUAD):
        pass
