"""Contract §7-§8 with the bridge's read-ahead: a reader call's fresh canonical read begins at
its preflight and its execution takes that read. Each call still gets its own read, taken after
its own preflight, and the delivery is still proved by the commit's fresh read.

On the real file system only: the read-ahead reads on a worker thread, and pyfakefs is not
thread-safe (its worlds run one execution at a time)."""

from __future__ import annotations

import os
import threading
from typing import Any, cast

import pytest

from application.canonical import CanonicalIntegrityError
from application.child.role import SpecChildRole
from application.ledger_files import ATTESTATION_FILE, STATE_FILE
from application.ports import FileSystem, StableRead, ToolFailure
from domain.child_environment import ChildEnvironment
from tests.contract.child_attestation.world import COUNT, SPEC, TABLE, ChildWorld, read_all
from tests.fakes.pi_harness import FakePiChild, read, result_texts
from tests.squads import child_environment


class CountingFileSystem:
    """The world's file system, counting the stable reads of the canonical file."""

    def __init__(self, inner: FileSystem, canonical: str) -> None:
        self._inner = inner
        self._canonical = canonical
        self._count_lock = threading.Lock()
        self.canonical_reads = 0

    def read_stable(self, path: str, *, max_bytes: int) -> StableRead:
        if path == self._canonical:
            with self._count_lock:
                self.canonical_reads += 1
        return self._inner.read_stable(path, max_bytes=max_bytes)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.fixture
def real_world(world: ChildWorld) -> ChildWorld:
    if world.emulated:
        pytest.skip("pyfakefs is not thread-safe: the read-ahead reads on a worker thread")
    return world


def ahead_role(world: ChildWorld, fs: FileSystem | None = None) -> SpecChildRole:
    role = ChildEnvironment.from_environ(child_environment(world.published, world.task_id), "posix")
    return SpecChildRole(
        role,  # type: ignore[arg-type]  # a spec child: the world's environment names a spec
        fs=fs or world.fs,
        locks=world.locks,
        clock=world.clock,
        ids=world.ids,
        read_ahead=True,
    )


def counted(world: ChildWorld) -> tuple[SpecChildRole, CountingFileSystem]:
    fs = CountingFileSystem(world.fs, world.canonical_path())
    role = ahead_role(world, cast(FileSystem, fs))
    role.session_start()
    fs.canonical_reads = 0
    return role, fs


def chunk(index: int) -> str:
    ref = TABLE.chunk(index)
    return SPEC[ref.start_byte : ref.end_byte_exclusive].decode()


def test_reads_begun_at_their_preflights_deliver_every_chunk_and_attest(
    real_world: ChildWorld,
) -> None:
    child = FakePiChild(lambda: ahead_role(real_world))
    messages = read_all(child, list(reversed(range(COUNT))))
    assert [result_texts(m)[1] for m in messages] == [chunk(i) for i in reversed(range(COUNT))]
    assert real_world.attestation_valid()


def test_each_call_gets_one_fresh_read_begun_by_its_own_preflight(real_world: ChildWorld) -> None:
    role, fs = counted(real_world)
    for index in range(COUNT):
        call = f"ahead-{index}"
        assert not role.tool_call(call, "squad_spec_read", {"index": index}).block
        result = role.execute_tool(call, "squad_spec_read", {"index": index})
        assert result.texts[1] == chunk(index)
        assert fs.canonical_reads == index + 1, "one read per call, none shared between calls"


def test_a_read_begun_serves_its_call_s_execution_once(real_world: ChildWorld) -> None:
    role, fs = counted(real_world)
    role.tool_call("once", "squad_spec_read", {"index": 0})
    role.execute_tool("once", "squad_spec_read", {"index": 0})
    real_world.flip_canonical_byte()
    with pytest.raises(ToolFailure, match="canonical spec integrity failure"):
        role.execute_tool("once", "squad_spec_read", {"index": 0})
    assert fs.canonical_reads == 2


def test_a_canonical_change_before_the_preflight_fails_the_execution(
    real_world: ChildWorld,
) -> None:
    role, _ = counted(real_world)
    role.tool_call("before", "squad_spec_read", {"index": 0})
    role.execute_tool("before", "squad_spec_read", {"index": 0})
    real_world.flip_canonical_byte()
    role.tool_call("after", "squad_spec_read", {"index": 1})
    with pytest.raises(ToolFailure, match="canonical spec integrity failure"):
        role.execute_tool("after", "squad_spec_read", {"index": 1})


def test_a_canonical_change_after_the_preflight_s_read_is_caught_by_the_commit(
    real_world: ChildWorld,
) -> None:
    child = FakePiChild(lambda: ahead_role(real_world))
    messages = child.assistant_message(
        [read(index) for index in range(COUNT)], next_model_call=False
    )
    assert not any(message["isError"] for message in messages), "each read verified at its time"
    real_world.flip_canonical_byte()
    with pytest.raises(CanonicalIntegrityError):
        child.context()
    assert not os.path.exists(real_world.path(STATE_FILE)), "no chunk counts"
    assert not os.path.exists(real_world.path(ATTESTATION_FILE))


def test_an_execution_without_its_preflight_or_for_another_index_reads_for_itself(
    real_world: ChildWorld,
) -> None:
    role, fs = counted(real_world)
    assert role.execute_tool("unflighted", "squad_spec_read", {"index": 1}).texts[1] == chunk(1)
    assert fs.canonical_reads == 1
    role.tool_call("moved", "squad_spec_read", {"index": 0})
    assert role.execute_tool("moved", "squad_spec_read", {"index": 1}).texts[1] == chunk(1)


def test_an_out_of_range_read_begun_at_preflight_fails_its_execution(
    real_world: ChildWorld,
) -> None:
    role, _ = counted(real_world)
    assert not role.tool_call("far", "squad_spec_read", {"index": COUNT}).block
    with pytest.raises(ToolFailure, match="out of range"):
        role.execute_tool("far", "squad_spec_read", {"index": COUNT})


def test_a_blocked_reader_call_begins_no_read(real_world: ChildWorld) -> None:
    role, fs = counted(real_world)
    assert role.tool_call("bad", "squad_spec_read", {"index": "0"}).block
    assert fs.canonical_reads == 0
