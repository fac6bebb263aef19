"""``Store`` over the on-disk layout of :class:`domain.squad.layout.SquadLayout`.

Under the root: ``<squad>/squad.json`` (with the pinned task set), parent-owned task records in
``<squad>/.records/<task>/`` (``task.json``, ``messages.jsonl`` append-only, ``mailbox.json``,
``observed.jsonl`` append-only) and the child-writable ledger directory ``<squad>/<task>/``
(read ledger, ``session/``). Every read-modify-write of a squad happens under that squad's
cross-process lock, and every JSON write is atomic, so two processes working on one squad never
lose an update. Tasks are loaded from the pinned set only: a pinned task whose records are
missing or corrupt raises :class:`SquadIntegrityError`, never "no such task" (a snapshot checks
every pinned task at once, a transaction each task when it first uses it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TypeVar

import attrs

from adapters.fs.change_clock import ChangeClock, Holders
from adapters.store.json_records import CorruptRecord, JsonSquadCodec
from adapters.store.pinned import PinnedTasks, check_pinned_ids
from adapters.store.records import (
    decode_mailbox,
    decode_message,
    decode_observations,
    encode_mailbox,
    encode_message,
    encode_observation,
    split_lines,
)
from adapters.store.task_cache import RecordCache
from application.list_squads import list_squads, unreadable_squad_ids
from application.ports import (
    FileSystem,
    LockFactory,
    SquadSnapshot,
    SquadTransaction,
    StableReadError,
    Store,
)
from domain import paths
from domain.attestation.grounding import Observation
from domain.errors import ErrorCode, NotFoundError, SquadIntegrityError
from domain.squad.ids import SAFE_TASK_ID_PATTERN, reserved_task_id_problem, squad_id_problem
from domain.squad.layout import SquadLayout
from domain.squad.messages import MailboxEntry, Message
from domain.squad.model import Squad, Task

_MAX_RECORD = 64 * 1024 * 1024
_DIR_MODE = 0o700
_T = TypeVar("_T")


def _decoded(path: str, decode: Callable[[bytes], _T], data: bytes) -> _T:
    """``decode(data)``; a ``CorruptRecord`` names ``path``."""
    try:
        return decode(data)
    except CorruptRecord as exc:
        raise exc.at(path) from None


class FileStore:
    def __init__(
        self,
        *,
        fs: FileSystem,
        locks: LockFactory,
        root: str,
        wall_ns: Callable[[], int] = time.time_ns,
        monotonic_ns: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self._fs = fs
        self._locks = locks
        self._root = root
        self._codec = JsonSquadCodec()
        # Only a transaction (under the squad lock) takes change-clock readings, which touch a
        # file: read-only commands move nothing.
        self._transactions = Holders()
        clock = ChangeClock(fs, root, wall_ns, monotonic_ns, may_touch=self._transactions.any)
        self._squads: RecordCache[Squad] = RecordCache(fs, clock)
        self._tasks: RecordCache[Task] = RecordCache(fs, clock)
        self._observed: RecordCache[tuple[Observation, ...]] = RecordCache(fs, clock)
        self._mailboxes: RecordCache[tuple[MailboxEntry, ...]] = RecordCache(fs, clock)
        self._checked_ids: dict[str, tuple[str, ...]] = {}
        self._paths: dict[tuple[str, str], tuple[str, str, str]] = {}
        self._layouts: dict[str, SquadLayout] = {}
        self._safe_task_ids: set[str] = set()

    @property
    def root(self) -> str:
        return self._root

    def layout(self, squad_id: str) -> SquadLayout:
        # Pure in the id (validated once): every record path of every look is built here.
        layout = self._layouts.get(squad_id)
        if layout is None:
            self.squad_dir(squad_id)  # validates the id
            layout = self._layouts[squad_id] = SquadLayout(self._root, squad_id, self._fs.flavour)
        return layout

    def squad_dir(self, squad_id: str) -> str:
        known = self._layouts.get(squad_id)
        if known is not None:
            return known.squad_dir
        # Reserved names too: ``agents`` is the root's directory of agent files, ``con`` a
        # device on Windows; ``create`` gives neither to a squad.
        problem = squad_id_problem(squad_id)
        if problem is not None:
            raise NotFoundError(
                ErrorCode.SQUAD_NOT_FOUND,
                f"not a squad id: {problem}; check the id (each squad is a directory under "
                f"{self._root})",
            )
        return paths.join_path(self._root, squad_id, flavour=self._fs.flavour)

    def _task_layout(self, squad_id: str, task_id: str) -> SquadLayout:
        if task_id not in self._safe_task_ids:
            if not SAFE_TASK_ID_PATTERN.match(task_id) or reserved_task_id_problem(task_id):
                raise ValueError(f"task id {task_id!r} cannot name a task directory")
            self._safe_task_ids.add(task_id)
        return self.layout(squad_id)

    def task_dir(self, squad_id: str, task_id: str) -> str:
        """The task's ledger directory (the only place its child may write)."""
        return self._task_layout(squad_id, task_id).ledger_dir(task_id)

    # -- reading -------------------------------------------------------------------------------

    def _read(self, path: str) -> bytes | None:
        try:
            return self._fs.read_small(path, _MAX_RECORD)
        except StableReadError:
            if not self._fs.exists(path):
                return None
            raise

    def list_squad_ids(self) -> list[str]:
        return [squad.id for squad in self.list_squads()]

    def list_squads(self) -> list[Squad]:
        return [listing.squad for listing in list_squads(self._fs, self._root, self._codec)]

    def unreadable_squad_ids(self) -> list[str]:
        return unreadable_squad_ids(self._fs, self._root, self._codec)

    def _load_squad(self, squad_id: str) -> Squad:
        path = self.layout(squad_id).squad_file
        # Cached as the task records are: re-read whenever its identity changes or is racy.
        squad = self._squads.load(
            path, _MAX_RECORD, lambda data: _decoded(path, self._codec.decode_squad, data)
        )
        if squad is None:
            raise NotFoundError(
                ErrorCode.SQUAD_NOT_FOUND,
                f"squad '{squad_id}' not found under {self._root}: check the id (each squad is "
                "a directory there; `pi-squad status` shows the newest) or set PI_SQUAD_ROOT to "
                "the root it was created in",
            )
        if squad.id != squad_id:
            raise CorruptRecord(f"names another squad than '{squad_id}'", path=path)
        return squad

    def _load_tasks(self, squad: Squad) -> dict[str, Task]:
        tasks = self._pinned_tasks(squad)
        return {task_id: tasks[task_id] for task_id in tasks}

    def _pinned_tasks(self, squad: Squad) -> PinnedTasks:
        # The ids are pure data: a tuple equal to the last one checked needs no second check.
        checked = self._checked_ids.get(squad.id) == squad.task_ids
        if not checked:
            check_pinned_ids(squad)
            self._checked_ids[squad.id] = squad.task_ids
        squad_id = squad.id
        return PinnedTasks(
            squad,
            lambda task_id: self._task_paths(squad_id, task_id)[0],
            self._fs,
            self._task_reader(squad),
            ids_checked=True,
        )

    def _task_paths(self, squad_id: str, task_id: str) -> tuple[str, str, str]:
        """A task's ledger directory, ``task.json`` and ``mailbox.json``, joined (and checked)
        once; ``task_id`` is pinned or was checked by ``_task_layout``."""
        key = (squad_id, task_id)
        known = self._paths.get(key)
        if known is None:
            layout = self.layout(squad_id)
            known = (
                layout.ledger_dir(task_id),
                layout.task_file(task_id),
                layout.mailbox_file(task_id),
            )
            self._paths[key] = known
        return known

    def _task_reader(self, squad: Squad) -> Callable[[str], Task]:
        def read_task(task_id: str) -> Task:
            path = self._task_paths(squad.id, task_id)[1]
            try:
                task = self._tasks.load(
                    path, _MAX_RECORD, lambda data: _decoded(path, self._codec.decode_task, data)
                )
            except StableReadError as exc:
                raise SquadIntegrityError(
                    squad.id, f"task '{task_id}': {path} cannot be read ({exc.failure.value})"
                ) from None
            except CorruptRecord as exc:
                # A pinned record that does not decode is as gone as a deleted one.
                raise SquadIntegrityError(
                    squad.id, f"task '{task_id}': {exc.path or path}: {exc.problem}"
                ) from None
            if task is None:
                raise SquadIntegrityError(
                    squad.id, f"task '{task_id}' is pinned but {path} is missing"
                )
            return task

        return read_task

    def snapshot(self, squad_id: str) -> SquadSnapshot:
        squad = self._load_squad(squad_id)
        return SquadSnapshot(squad=squad, tasks=self._load_tasks(squad))

    def mailbox(self, squad_id: str, task_id: str) -> tuple[MailboxEntry, ...]:
        # A pass reads every finished task's mailbox: its path is joined once, and an id
        # never seen here is checked before any path is built from it.
        if (squad_id, task_id) not in self._paths:
            self._task_layout(squad_id, task_id)
        path = self._task_paths(squad_id, task_id)[2]
        # Cached by file identity as the task records are: read again only when it changed.
        mailbox = self._mailboxes.load(
            path, _MAX_RECORD, lambda data: _decoded(path, decode_mailbox, data)
        )
        return () if mailbox is None else mailbox

    def messages(self, squad_id: str, task_id: str) -> list[Message]:
        path = self._task_layout(squad_id, task_id).messages_file(task_id)
        data = self._read(path) or b""
        history: list[Message] = []
        for line in split_lines(data):
            try:
                history.append(decode_message(line))
            except CorruptRecord:
                continue  # a torn tail or a corrupt line is skipped, as upstream readers do
        known = {m.id for m in history}
        extra = [e.message for e in self.mailbox(squad_id, task_id) if e.message.id not in known]
        return sorted([*history, *extra], key=lambda m: m.ts)

    def observations(self, squad_id: str, task_id: str) -> tuple[Observation, ...]:
        """What the parent observed of the task's children (a torn tail line is skipped)."""
        path = self._task_layout(squad_id, task_id).observed_file(task_id)
        return self._observed.load(path, _MAX_RECORD, decode_observations) or ()

    # -- writing -------------------------------------------------------------------------------

    @contextmanager
    def transaction(self, squad_id: str) -> Iterator[SquadTransaction]:
        lock = self._locks.lock(self.layout(squad_id).squad_lock, timeout=30.0)
        with lock, self._transactions.held():
            squad = self._load_squad(squad_id)
            # Each task record is read and checked when the transaction first uses it.
            transaction = _FileTransaction(self, squad, self._pinned_tasks(squad))
            yield transaction
            transaction.commit()

    def record_observation(self, squad_id: str, task_id: str, observation: Observation) -> None:
        layout = self._task_layout(squad_id, task_id)
        self._fs.append_bytes(layout.observed_file(task_id), encode_observation(observation))

    def quarantine(self, squad_id: str, reason: str) -> None:
        """Set the squad's quarantine from its own record alone (its tasks may not load)."""
        with self._locks.lock(self.layout(squad_id).squad_lock, timeout=30.0):
            squad = self._load_squad(squad_id)
            if squad.quarantine != reason:
                self._write_squad(attrs.evolve(squad, quarantine=reason))

    def _write_squad(self, squad: Squad) -> None:
        self._fs.write_atomic(self.layout(squad.id).squad_file, self._codec.encode_squad(squad))

    def _write_task(self, squad_id: str, task: Task) -> None:
        layout = self._task_layout(squad_id, task.id)
        for directory in (layout.ledger_dir(task.id), layout.records_root):
            if not self._fs.is_dir(directory):
                self._fs.make_dir_exclusive(directory, _DIR_MODE)
        if not self._fs.is_dir(layout.records_dir(task.id)):
            self._fs.make_dir_exclusive(layout.records_dir(task.id), _DIR_MODE)
        self._fs.write_atomic(layout.task_file(task.id), self._codec.encode_task(task))

    def _write_mailbox(
        self, squad_id: str, task_id: str, entries: tuple[MailboxEntry, ...]
    ) -> None:
        layout = self._task_layout(squad_id, task_id)
        self._fs.write_atomic(layout.mailbox_file(task_id), encode_mailbox(entries))

    def _append_message(self, squad_id: str, task_id: str, message: Message) -> None:
        layout = self._task_layout(squad_id, task_id)
        self._fs.append_bytes(layout.messages_file(task_id), encode_message(message))


@attrs.define
class _FileTransaction:
    _store: FileStore
    _squad: Squad
    _tasks: PinnedTasks
    _squad_changed: bool = False
    _changed_tasks: dict[str, Task] = attrs.field(factory=dict)
    _mailboxes: dict[str, tuple[MailboxEntry, ...]] = attrs.field(factory=dict)
    _changed_mailboxes: set[str] = attrs.field(factory=set)
    _messages: list[tuple[str, Message]] = attrs.field(factory=list)

    @property
    def squad(self) -> Squad:
        return self._squad

    @property
    def tasks(self) -> Mapping[str, Task]:
        return self._tasks

    def put_squad(self, squad: Squad) -> None:
        if squad.id != self._squad.id:
            raise ValueError("a transaction changes only its own squad")
        if squad != self._squad:
            self._squad = squad
            self._squad_changed = True

    def put_task(self, task: Task) -> None:
        if self._tasks.get(task.id) != task:
            self._tasks.put(task)
            self._changed_tasks[task.id] = task

    def mailbox(self, task_id: str) -> tuple[MailboxEntry, ...]:
        if task_id not in self._mailboxes:
            self._mailboxes[task_id] = self._store.mailbox(self._squad.id, task_id)
        return self._mailboxes[task_id]

    def put_mailbox(self, task_id: str, entries: tuple[MailboxEntry, ...]) -> None:
        if self.mailbox(task_id) == entries:
            return  # unchanged: no write, as put_task
        self._mailboxes[task_id] = entries
        self._changed_mailboxes.add(task_id)

    def append_message(self, task_id: str, message: Message) -> None:
        self._messages.append((task_id, message))

    def commit(self) -> None:
        squad_id = self._squad.id
        new_ids = [t for t in self._changed_tasks if t not in self._squad.task_ids]
        if new_ids:
            # squad.json is written after the task records: pinning is the commit point of a
            # new task. A record on disk that squad.json does not name is ignored (a crash
            # before the pin loses an unreported add), a named one never goes missing.
            self.put_squad(attrs.evolve(self._squad, task_ids=(*self._squad.task_ids, *new_ids)))
        for task in self._changed_tasks.values():
            self._store._write_task(squad_id, task)
        for task_id in sorted(self._changed_mailboxes):
            self._store._write_mailbox(squad_id, task_id, self._mailboxes[task_id])
        if self._squad_changed:
            self._store._write_squad(self._squad)
        for task_id, message in self._messages:
            self._store._append_message(squad_id, task_id, message)


_store_conforms: type[Store] = FileStore
_transaction_conforms: type[SquadTransaction] = _FileTransaction
