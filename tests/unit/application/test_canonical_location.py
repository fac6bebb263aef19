"""The parent's canonical reads hold the file to ``<squad-dir>/spec/spec.v1.json`` of that squad,
with no symbolic link on the way (red-team issue 11, finding 5), over the in-memory file system.
"""

from __future__ import annotations

import pytest

from application.canonical import CanonicalIntegrityError, CanonicalReader
from domain.chunks import CHUNK_BYTES, ChunkTable
from domain.squad.model import SpecRef
from tests.builders import sha
from tests.fakes.filesystem import InMemoryFileSystem

SQUAD_DIR = "/root/squads/ship-it"
CANONICAL = f"{SQUAD_DIR}/spec/spec.v1.json"
DATA = b'{"schemaVersion": 1}\n'


def spec_at(path: str) -> SpecRef:
    return SpecRef(
        sha256=sha(DATA),
        bytes=len(DATA),
        path=path,
        chunk_bytes=CHUNK_BYTES,
        chunk_count=ChunkTable.of(DATA).chunk_count,
    )


@pytest.fixture
def fs() -> InMemoryFileSystem:
    memory = InMemoryFileSystem()
    memory.add_file(CANONICAL, DATA, 0o400)
    return memory


def refusal(fs: InMemoryFileSystem, path: str) -> str:
    with pytest.raises(CanonicalIntegrityError) as caught:
        CanonicalReader(fs, spec_at(path), squad_dir=SQUAD_DIR).read()
    return caught.value.reason


def test_the_squads_own_canonical_file_reads(fs: InMemoryFileSystem) -> None:
    assert CanonicalReader(fs, spec_at(CANONICAL), squad_dir=SQUAD_DIR).read().data == DATA


@pytest.mark.parametrize(
    "elsewhere",
    [
        "/tmp/outside/spec.v1.json",
        "/root/squads/other/spec/spec.v1.json",
        f"{SQUAD_DIR}/spec.v1.json",
        f"{SQUAD_DIR}/build/spec/spec.v1.json",
        f"{SQUAD_DIR}/spec/spec.v2.json",
    ],
)
def test_an_identical_copy_anywhere_else_never_verifies(
    fs: InMemoryFileSystem, elsewhere: str
) -> None:
    fs.add_file(elsewhere, DATA, 0o400)
    assert refusal(fs, elsewhere) == (
        f"canonical spec path is not {CANONICAL} (<squad-dir>/spec/spec.v1.json of this squad); "
        "squad.json points elsewhere"
    )


def test_a_spec_directory_replaced_by_a_symlink_never_verifies(fs: InMemoryFileSystem) -> None:
    fs.add_file("/elsewhere/spec/spec.v1.json", DATA, 0o400)
    fs.remove_tree(f"{SQUAD_DIR}/spec")
    fs.add_symlink(f"{SQUAD_DIR}/spec", "/elsewhere/spec")
    assert refusal(fs, CANONICAL) == (
        f"canonical spec directory {SQUAD_DIR}/spec is not a real directory (a symbolic link, "
        "or missing)"
    )


def test_a_squad_directory_replaced_by_a_symlink_never_verifies(fs: InMemoryFileSystem) -> None:
    fs.add_file("/elsewhere/ship-it/spec/spec.v1.json", DATA, 0o400)
    fs.remove_tree(SQUAD_DIR)
    fs.add_symlink(SQUAD_DIR, "/elsewhere/ship-it")
    assert "is not a real directory" in refusal(fs, CANONICAL)


def test_the_location_is_checked_before_any_byte_is_read(fs: InMemoryFileSystem) -> None:
    fs.add_file("/tmp/outside/spec.v1.json", DATA, 0o400)
    refusal(fs, "/tmp/outside/spec.v1.json")
    assert fs.calls_of("read_stable") == []
