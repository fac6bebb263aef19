"""The file store's records over the in-memory file system: red-team regressions (issue 11).

A corrupt ``squad.json``, ``task.json`` or ``mailbox.json`` is one coded error,
``RECORD_CORRUPT``, naming the file and never quoting its content; a torn last line of
``messages.jsonl`` never swallows the next message appended after it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from adapters.store_files import FileStore
from adapters.store_json import CorruptRecord, JsonSquadCodec
from domain.errors import ErrorCode, PiSquadError
from domain.spec.model import SquadConfig
from domain.squad.model import Squad, SquadStatus, Task, TaskStatus
from tests.fakes.filesystem import InMemoryFileSystem
from tests.fakes.locks import FakeLockFactory

ROOT = "/squads"
SQUAD = "ship-it"
MOMENT = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
SECRET = "Zebra-Quartz-7731"


def squad_record() -> Squad:
    return Squad(
        id=SQUAD,
        goal=f"Ship it {SECRET}",
        status=SquadStatus.RUNNING,
        created=MOMENT,
        cwd="/work",
        config=SquadConfig(max_concurrency=1, auto_unblock=True, max_retries=0),
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
    memory.add_file(f"{ROOT}/{SQUAD}/build/task.json", codec.encode_task(task_record()))
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


@pytest.mark.parametrize("corruption", CORRUPT)
@pytest.mark.parametrize("record", ["squad.json", "build/task.json"])
def test_a_corrupt_record_is_record_corrupt_naming_the_file(
    fs: InMemoryFileSystem, record: str, corruption: str
) -> None:
    path = f"{ROOT}/{SQUAD}/{record}"
    fs.add_file(path, CORRUPT[corruption](fs.read(path)))

    with pytest.raises(CorruptRecord) as caught:
        store_on(fs).snapshot(SQUAD)

    error = caught.value
    assert isinstance(error, PiSquadError)
    assert isinstance(error, ValueError)
    assert error.code is ErrorCode.RECORD_CORRUPT
    assert error.message.startswith(f"{path}: not a valid ")
    assert "restore it from a backup" in error.message
    assert SECRET not in error.message, "messages never quote record content"


@pytest.mark.parametrize("content", [b"", b'[{"id": ', b'{"a": 1}\n', b"[1]\n"])
def test_a_corrupt_mailbox_is_record_corrupt_naming_the_file(
    fs: InMemoryFileSystem, content: bytes
) -> None:
    path = f"{ROOT}/{SQUAD}/build/mailbox.json"
    fs.add_file(path, content)

    with pytest.raises(CorruptRecord) as caught:
        store_on(fs).mailbox(SQUAD, "build")

    assert caught.value.code is ErrorCode.RECORD_CORRUPT
    assert caught.value.message.startswith(f"{path}: not a ")


def test_a_record_naming_another_task_is_record_corrupt(fs: InMemoryFileSystem) -> None:
    path = f"{ROOT}/{SQUAD}/build/task.json"
    fs.add_file(path, fs.read(path).replace(b'"id": "build"', b'"id": "other"'))

    with pytest.raises(CorruptRecord) as caught:
        store_on(fs).snapshot(SQUAD)

    assert caught.value.message.startswith(f"{path}: names another task than 'build': ")
