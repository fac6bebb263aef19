"""``list_squads``: only whole, published squads are listed (upstream ``listSquads`` rules)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from adapters.store.json_records import JsonSquadCodec
from application.list_squads import list_squads, unreadable_squad_ids
from tests.builders import squad_record
from tests.fakes.filesystem import InMemoryFileSystem

ROOT = "/squads"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def record(squad_id: str, created: datetime = T0) -> bytes:
    return JsonSquadCodec().encode_squad(squad_record(squad_id, created=created))


@pytest.fixture
def fs() -> InMemoryFileSystem:
    memory = InMemoryFileSystem()
    memory.add_dir(ROOT)
    return memory


def listed_ids(fs: InMemoryFileSystem) -> list[str]:
    return [listing.id for listing in list_squads(fs, ROOT, JsonSquadCodec())]


def test_a_missing_root_lists_nothing() -> None:
    assert list_squads(InMemoryFileSystem(), ROOT, JsonSquadCodec()) == []


def test_a_directory_with_a_valid_squad_json_is_listed_with_its_directory(
    fs: InMemoryFileSystem,
) -> None:
    fs.add_file(f"{ROOT}/alpha/squad.json", record("alpha"))
    [listing] = list_squads(fs, ROOT, JsonSquadCodec())
    assert (listing.id, listing.squad_dir, listing.squad.goal) == ("alpha", f"{ROOT}/alpha", "g")


@pytest.mark.parametrize(
    "name",
    [
        "agents",
        "knowledge",
        "memory.jsonl",
        "alpha.creating." + "0" * 32,
        "alpha.creating.anything",
        ".staging-locks",
        ".hidden",
    ],
)
def test_reserved_staging_and_dot_names_are_never_listed(fs: InMemoryFileSystem, name: str) -> None:
    fs.add_file(f"{ROOT}/{name}/squad.json", record("alpha"))
    assert listed_ids(fs) == []


def test_a_directory_without_squad_json_is_not_listed(fs: InMemoryFileSystem) -> None:
    fs.add_file(f"{ROOT}/alpha/spec/spec.v1.json", b"{}")
    assert listed_ids(fs) == []


@pytest.mark.parametrize("content", [b"", b"{", b'{"id": "alpha"}', b"\xff\xfe", b"[]"])
def test_a_corrupt_squad_json_is_not_listed(fs: InMemoryFileSystem, content: bytes) -> None:
    fs.add_file(f"{ROOT}/alpha/squad.json", content)
    assert listed_ids(fs) == []


def test_a_squad_json_that_is_a_symlink_is_not_listed(fs: InMemoryFileSystem) -> None:
    fs.add_file("/elsewhere/squad.json", record("alpha"))
    fs.add_dir(f"{ROOT}/alpha")
    fs.add_symlink(f"{ROOT}/alpha/squad.json", "/elsewhere/squad.json")
    assert listed_ids(fs) == []


def test_a_symlink_to_a_squad_directory_is_not_listed(fs: InMemoryFileSystem) -> None:
    fs.add_file("/elsewhere/alpha/squad.json", record("alpha"))
    fs.add_symlink(f"{ROOT}/alpha", "/elsewhere/alpha")
    assert listed_ids(fs) == []


def test_a_plain_file_in_the_root_is_not_listed(fs: InMemoryFileSystem) -> None:
    fs.add_file(f"{ROOT}/alpha", record("alpha"))
    assert listed_ids(fs) == []


def test_squads_are_sorted_by_creation_time_then_id(fs: InMemoryFileSystem) -> None:
    later = T0 + timedelta(seconds=1)
    fs.add_file(f"{ROOT}/zeta/squad.json", record("zeta", T0))
    fs.add_file(f"{ROOT}/alpha/squad.json", record("alpha", later))
    fs.add_file(f"{ROOT}/beta/squad.json", record("beta", T0))
    assert listed_ids(fs) == ["beta", "zeta", "alpha"]


def test_listing_writes_nothing(fs: InMemoryFileSystem) -> None:
    fs.add_file(f"{ROOT}/alpha/squad.json", record("alpha"))
    before = fs.tree()
    listed_ids(fs)
    assert fs.tree() == before
    assert set(fs.operations()) <= {"list_dir", "is_dir", "read_small"}


def unreadable(fs: InMemoryFileSystem) -> list[str]:
    return unreadable_squad_ids(fs, ROOT, JsonSquadCodec())


@pytest.mark.parametrize("content", [b"", b"{", b"[]", record("beta")])
def test_a_squad_whose_record_does_not_list_is_named_unreadable(
    fs: InMemoryFileSystem, content: bytes
) -> None:
    fs.add_file(f"{ROOT}/alpha/squad.json", record("alpha"))
    fs.add_file(f"{ROOT}/gamma/squad.json", content)
    assert listed_ids(fs) == ["alpha"]
    assert unreadable(fs) == ["gamma"]


@pytest.mark.parametrize(
    "path",
    [
        "alpha/spec/spec.v1.json",  # a directory without squad.json: no squad
        "Not_An_Id/squad.json",  # never a squad id
        "agents/squad.json",  # the root's own entries
        "con/squad.json",
        "alpha.creating.anything/squad.json",  # staging
        ".staging-locks/squad.json",
    ],
)
def test_what_is_no_squad_is_not_named_unreadable(fs: InMemoryFileSystem, path: str) -> None:
    fs.add_file(f"{ROOT}/{path}", b"{")
    assert unreadable(fs) == []
