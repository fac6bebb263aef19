"""``Store`` over the upstream on-disk layout, on the ``FileSystem`` and ``LockFactory`` ports.

Layout under the root: ``<squad>/squad.json``, ``<squad>/<task>/task.json``,
``<task>/messages.jsonl`` (append-only), ``<task>/mailbox.json``, ``<task>/session/``. Every
read-modify-write of a squad happens under that squad's cross-process lock, and every JSON
write is atomic, so two processes working on one squad never lose an update.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TypeVar

import attrs
import cattrs

from adapters.store_json import _CONVERTER, CorruptRecord, JsonSquadCodec, describe_failure
from application.list_squads import list_squads
from application.ports import (
    FileSystem,
    LockFactory,
    SquadSnapshot,
    SquadTransaction,
    StableReadError,
    Store,
)
from domain import paths
from domain.errors import ErrorCode, NotFoundError
from domain.squad.ids import SAFE_TASK_ID_PATTERN, SQUAD_ID_PATTERN, reserved_task_id_problem
from domain.squad.messages import MailboxEntry, Message
from domain.squad.model import Squad, Task
from domain.strict_json import JsonDecodeFailure, decode_json

SQUAD_FILE = "squad.json"
TASK_FILE = "task.json"
MESSAGES_FILE = "messages.jsonl"
MAILBOX_FILE = "mailbox.json"
SQUAD_LOCK = ".squad.lock"
_MAX_RECORD = 64 * 1024 * 1024
_T = TypeVar("_T")


def encode_message(message: Message) -> bytes:
    document = _CONVERTER.unstructure(message)
    return (json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def decode_message(data: bytes) -> Message:
    try:
        message: Message = _CONVERTER.structure(decode_json(data), Message)
    except (JsonDecodeFailure, ValueError, TypeError, KeyError, cattrs.BaseValidationError) as exc:
        raise CorruptRecord(
            f"not a valid message record: {describe_failure(exc)}", record="messages.jsonl"
        ) from None
    return message


def decode_mailbox(data: bytes) -> tuple[MailboxEntry, ...]:
    try:
        raw = decode_json(data)
        if not isinstance(raw, list):
            raise CorruptRecord("not a JSON array", record="mailbox.json")
        entries = tuple(_CONVERTER.structure(item, MailboxEntry) for item in raw)
    except (JsonDecodeFailure, ValueError, TypeError, KeyError, cattrs.BaseValidationError) as exc:
        raise CorruptRecord(
            f"not a valid mailbox: {describe_failure(exc)}", record="mailbox.json"
        ) from None
    return entries


def _decoded(path: str, decode: Callable[[bytes], _T], data: bytes) -> _T:
    """``decode(data)``; a ``CorruptRecord`` names ``path``."""
    try:
        return decode(data)
    except CorruptRecord as exc:
        raise exc.at(path) from None


def encode_mailbox(entries: tuple[MailboxEntry, ...]) -> bytes:
    return (
        json.dumps([_CONVERTER.unstructure(e) for e in entries], indent=2, ensure_ascii=False)
        + "\n"
    ).encode()


class FileStore:
    def __init__(self, *, fs: FileSystem, locks: LockFactory, root: str) -> None:
        self._fs = fs
        self._locks = locks
        self._root = root
        self._codec = JsonSquadCodec()

    @property
    def root(self) -> str:
        return self._root

    def _join(self, *names: str) -> str:
        return paths.join_path(self._root, *names, flavour=self._fs.flavour)

    def squad_dir(self, squad_id: str) -> str:
        if not SQUAD_ID_PATTERN.match(squad_id):
            raise NotFoundError(
                ErrorCode.SQUAD_NOT_FOUND,
                "not a squad id: a squad id is 1-128 lowercase letters, digits and inner "
                f"hyphens; check the id (each squad is a directory under {self._root})",
            )
        return self._join(squad_id)

    def task_dir(self, squad_id: str, task_id: str) -> str:
        if not SAFE_TASK_ID_PATTERN.match(task_id) or reserved_task_id_problem(task_id):
            raise ValueError(f"task id {task_id!r} cannot name a task directory")
        return self._join(squad_id, task_id)

    # -- reading -------------------------------------------------------------------------------

    def _read(self, path: str) -> bytes | None:
        try:
            return self._fs.read_small(path, _MAX_RECORD)
        except StableReadError:
            if not self._fs.exists(path):
                return None
            raise

    def list_squad_ids(self) -> list[str]:
        return [listing.id for listing in list_squads(self._fs, self._root, self._codec)]

    def _load_squad(self, squad_id: str) -> Squad:
        path = paths.join_path(self.squad_dir(squad_id), SQUAD_FILE, flavour=self._fs.flavour)
        data = self._read(path)
        if data is None:
            raise NotFoundError(
                ErrorCode.SQUAD_NOT_FOUND,
                f"squad '{squad_id}' not found under {self._root}: check the id (each squad is "
                "a directory there; `pi-squad status` shows the newest) or set PI_SQUAD_ROOT to "
                "the root it was created in",
            )
        squad = _decoded(path, self._codec.decode_squad, data)
        if squad.id != squad_id:
            raise CorruptRecord(f"names another squad than '{squad_id}'", path=path)
        return squad

    def _load_tasks(self, squad_id: str) -> dict[str, Task]:
        tasks: dict[str, Task] = {}
        squad_dir = self.squad_dir(squad_id)
        for name in self._fs.list_dir(squad_dir):
            if reserved_task_id_problem(name) or not SAFE_TASK_ID_PATTERN.match(name):
                continue
            task_dir = self._join(squad_id, name)
            if not self._fs.is_dir(task_dir):
                continue
            path = paths.join_path(task_dir, TASK_FILE, flavour=self._fs.flavour)
            data = self._read(path)
            if data is None:
                continue
            task = _decoded(path, self._codec.decode_task, data)
            if task.id != name:
                raise CorruptRecord(f"names another task than '{name}'", path=path)
            tasks[name] = task
        return tasks

    def snapshot(self, squad_id: str) -> SquadSnapshot:
        return SquadSnapshot(squad=self._load_squad(squad_id), tasks=self._load_tasks(squad_id))

    def mailbox(self, squad_id: str, task_id: str) -> tuple[MailboxEntry, ...]:
        path = paths.join_path(
            self.task_dir(squad_id, task_id), MAILBOX_FILE, flavour=self._fs.flavour
        )
        data = self._read(path)
        return () if data is None else _decoded(path, decode_mailbox, data)

    def messages(self, squad_id: str, task_id: str) -> list[Message]:
        path = paths.join_path(
            self.task_dir(squad_id, task_id), MESSAGES_FILE, flavour=self._fs.flavour
        )
        data = self._read(path) or b""
        history: list[Message] = []
        for line in data.split(b"\n"):
            if not line.strip():
                continue
            try:
                history.append(decode_message(line))
            except CorruptRecord:
                continue  # a torn tail or a corrupt line is skipped, as upstream readers do
        known = {m.id for m in history}
        extra = [e.message for e in self.mailbox(squad_id, task_id) if e.message.id not in known]
        return sorted([*history, *extra], key=lambda m: m.ts)

    # -- writing -------------------------------------------------------------------------------

    @contextmanager
    def transaction(self, squad_id: str) -> Iterator[SquadTransaction]:
        lock = paths.join_path(self.squad_dir(squad_id), SQUAD_LOCK, flavour=self._fs.flavour)
        with self._locks.lock(lock, timeout=30.0):
            transaction = _FileTransaction(
                self, self._load_squad(squad_id), self._load_tasks(squad_id)
            )
            yield transaction
            transaction.commit()

    def _write_squad(self, squad: Squad) -> None:
        self._fs.write_atomic(
            paths.join_path(self.squad_dir(squad.id), SQUAD_FILE, flavour=self._fs.flavour),
            self._codec.encode_squad(squad),
        )

    def _write_task(self, squad_id: str, task: Task) -> None:
        task_dir = self.task_dir(squad_id, task.id)
        if not self._fs.is_dir(task_dir):
            self._fs.make_dir_exclusive(task_dir, 0o700)
        self._fs.write_atomic(
            paths.join_path(task_dir, TASK_FILE, flavour=self._fs.flavour),
            self._codec.encode_task(task),
        )

    def _write_mailbox(
        self, squad_id: str, task_id: str, entries: tuple[MailboxEntry, ...]
    ) -> None:
        self._fs.write_atomic(
            paths.join_path(
                self.task_dir(squad_id, task_id), MAILBOX_FILE, flavour=self._fs.flavour
            ),
            encode_mailbox(entries),
        )

    def _append_message(self, squad_id: str, task_id: str, message: Message) -> None:
        self._fs.append_bytes(
            paths.join_path(
                self.task_dir(squad_id, task_id), MESSAGES_FILE, flavour=self._fs.flavour
            ),
            encode_message(message),
        )


@attrs.define
class _FileTransaction:
    _store: FileStore
    _squad: Squad
    _tasks: dict[str, Task]
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
            self._tasks[task.id] = task
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
