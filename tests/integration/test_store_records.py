"""The file store's records over the in-memory file system: red-team regressions (issue 11).

A corrupt ``squad.json`` or ``mailbox.json`` is one coded error, ``RECORD_CORRUPT``; a corrupt
pinned ``task.json`` is ``SQUAD_INTEGRITY`` (a pinned task whose record does not decode is as
gone as a deleted one). Both name the file and never quote its content; a torn last line of
``messages.jsonl`` never swallows the next message appended after it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import attrs
import pytest

from adapters.fs.platform import native_file_system
from adapters.store.files import FileStore
from adapters.store.json_records import CorruptRecord, JsonSquadCodec
from adapters.store.records import encode_message
from domain.errors import ErrorCode, PiSquadError, SquadIntegrityError
from domain.spec.model import SquadConfig
from domain.squad.messages import Message, MessageKind
from domain.squad.model import Actor, Squad, SquadStatus, Task, TaskStatus
from tests.fakes.filesystem import InMemoryFileSystem
from tests.fakes.locks import FakeLockFactory

ROOT = "/squads"
SQUAD = "ship-it"
MOMENT = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
SECRET = "Zebra-Quartz-7731"
TASK_RECORD = ".records/build/task.json"

Failure = TypeVar("Failure", bound=PiSquadError)


def squad_record() -> Squad:
    return Squad(
        id=SQUAD,
        goal=f"Ship it {SECRET}",
        status=SquadStatus.RUNNING,
        created=MOMENT,
        cwd="/work",
        config=SquadConfig(max_concurrency=1, auto_unblock=True, max_retries=0),
        task_ids=("build",),
    )


def task_record() -> Task:
    return Task(
        id="build",
        title=f"Build {SECRET}",
        description="",
        agent="backend",
        status=TaskStatus.PENDING,
        depends=(),
        created=MOMENT,
    )


@pytest.fixture
def fs() -> InMemoryFileSystem:
    codec = JsonSquadCodec()
    memory = InMemoryFileSystem()
    memory.add_file(f"{ROOT}/{SQUAD}/squad.json", codec.encode_squad(squad_record()))
    memory.add_dir(f"{ROOT}/{SQUAD}/build")
    memory.add_file(f"{ROOT}/{SQUAD}/{TASK_RECORD}", codec.encode_task(task_record()))
    return memory


def store_on(fs: InMemoryFileSystem) -> FileStore:
    return FileStore(fs=fs, locks=FakeLockFactory(), root=ROOT)


def _wrong_type(data: bytes) -> bytes:
    """The status name wrapped in an array."""
    return data.replace(b'"status": "pending"', b'"status": ["pending"]', 1).replace(
        b'"status": "running"', b'"status": ["running"]', 1
    )


CORRUPT: dict[str, Callable[[bytes], bytes]] = {
    "truncated": lambda data: data[: len(data) // 2],
    "empty": lambda _data: b"",
    "wrong-type": _wrong_type,
    "array": lambda _data: b"[]\n",
    "unknown-key": lambda data: data.replace(b"{", b'{"Zebra-Quartz-7731": 1,', 1),
}


WHAT = {
    "truncated": ": not strict JSON: ",
    "empty": ": the file is empty",
    "wrong-type": ": wrong shape: ",
    "array": ": wrong shape: top level is a JSON array, not an object",
    "unknown-key": ": wrong shape: unknown fields @ $",
}


def snapshot_failure(
    fs: InMemoryFileSystem, path: str, corruption: str, expected: type[Failure]
) -> Failure:
    """What loading the squad raises once the record at ``path`` is corrupted as ``corruption``
    says; its message says what is wrong without quoting the record."""
    fs.add_file(path, CORRUPT[corruption](fs.read(path)))

    with pytest.raises(expected) as caught:
        store_on(fs).snapshot(SQUAD)

    error = caught.value
    assert SECRET not in error.message, "messages never quote record content"
    assert WHAT[corruption] in error.message
    return error


@pytest.mark.parametrize("corruption", CORRUPT)
def test_a_corrupt_squad_record_is_record_corrupt_naming_the_file(
    fs: InMemoryFileSystem, corruption: str
) -> None:
    path = f"{ROOT}/{SQUAD}/squad.json"
    error = snapshot_failure(fs, path, corruption, CorruptRecord)
    assert isinstance(error, PiSquadError)
    assert isinstance(error, ValueError)
    assert error.code is ErrorCode.RECORD_CORRUPT
    assert error.message.startswith(f"{path}: not a valid ")
    assert "restore it from a backup" in error.message


@pytest.mark.parametrize("corruption", CORRUPT)
def test_a_corrupt_pinned_task_record_is_an_integrity_failure_naming_the_file(
    fs: InMemoryFileSystem, corruption: str
) -> None:
    path = f"{ROOT}/{SQUAD}/{TASK_RECORD}"
    error = snapshot_failure(fs, path, corruption, SquadIntegrityError)
    assert error.code is ErrorCode.SQUAD_INTEGRITY
    assert f"task 'build': {path}: not a valid task record" in error.message


@pytest.mark.parametrize("content", [b"", b'[{"id": ', b'{"a": 1}\n', b"[1]\n"])
def test_a_corrupt_mailbox_is_record_corrupt_naming_the_file(
    fs: InMemoryFileSystem, content: bytes
) -> None:
    path = f"{ROOT}/{SQUAD}/.records/build/mailbox.json"
    fs.add_file(path, content)

    with pytest.raises(CorruptRecord) as caught:
        store_on(fs).mailbox(SQUAD, "build")

    assert caught.value.code is ErrorCode.RECORD_CORRUPT
    assert caught.value.message.startswith(f"{path}: not a ")


def test_a_record_naming_another_task_is_an_integrity_failure(fs: InMemoryFileSystem) -> None:
    path = f"{ROOT}/{SQUAD}/{TASK_RECORD}"
    fs.add_file(path, fs.read(path).replace(b'"id": "build"', b'"id": "other"'))

    with pytest.raises(SquadIntegrityError) as caught:
        store_on(fs).snapshot(SQUAD)

    assert "the record of task 'build' names another task" in caught.value.message


# -- finding 4: a torn last line of messages.jsonl never swallows the next message -------------


def message(number: int) -> Message:
    return Message(
        id=f"m{number}",
        ts=MOMENT.replace(minute=number),
        sender="user",
        kind=MessageKind.TEXT,
        text=f"message {number}",
    )


@pytest.mark.parametrize("kind", ["memory", "real"])
def test_a_message_appended_after_a_torn_tail_is_read_back(
    fs: InMemoryFileSystem, tmp_path: Path, kind: str
) -> None:
    store = store_on(fs) if kind == "memory" else real_store(tmp_path)
    with store.transaction(SQUAD) as tx:
        tx.append_message("build", message(1))
    path = store.layout(SQUAD).messages_file("build")
    whole = read_bytes(fs, path) if kind == "memory" else Path(path).read_bytes()
    torn = whole + encode_message(message(2))[:20]  # a writer died mid-append
    if kind == "memory":
        fs.add_file(path, torn)
    else:
        Path(path).write_bytes(torn)

    with store.transaction(SQUAD) as tx:
        tx.append_message("build", message(3))

    assert [m.id for m in store.messages(SQUAD, "build")] == ["m1", "m3"]


def read_bytes(fs: InMemoryFileSystem, path: str) -> bytes:
    return fs.read(path)


def real_store(tmp_path: Path) -> FileStore:
    """The same squad on the real file system, through the POSIX adapter."""
    codec = JsonSquadCodec()
    root = tmp_path / "squads"
    (root / SQUAD / "build").mkdir(parents=True)
    (root / SQUAD / ".records" / "build").mkdir(parents=True)
    (root / SQUAD / "squad.json").write_bytes(codec.encode_squad(squad_record()))
    (root / SQUAD / TASK_RECORD).write_bytes(codec.encode_task(task_record()))
    return FileStore(fs=native_file_system(), locks=FakeLockFactory(), root=str(root))


def test_who_cancelled_and_a_dismissal_are_written_only_once_set_and_read_back() -> None:
    codec = JsonSquadCodec()
    plain = codec.encode_squad(squad_record())
    assert b"cancelledBy" not in plain, "a record upstream reads stays as upstream writes it"
    assert b"dismissedAt" not in plain
    cancelled = attrs.evolve(
        squad_record(),
        status=SquadStatus.FAILED,
        cancelled_at=MOMENT,
        cancelled_by=Actor.PERSON,
        dismissed_at=MOMENT,
    )
    data = codec.encode_squad(cancelled)
    assert b'"cancelledBy": "person"' in data
    assert codec.decode_squad(data) == cancelled
