"""Contract §8 child rows: the guard blocks every normal tool until the attestation is
complete, and fails closed when it cannot decide."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import attrs
import pytest

from application.child.role import GUARD_REASON, SpecChildRole
from application.ports import ToolResult
from tests.contract import _fs_worlds
from tests.contract.child_attestation.world import COUNT, ChildWorld, read_all
from tests.fakes.pi_harness import read, result_texts, tool
from tests.host_fs import posix_adapter


@pytest.mark.parametrize(
    "call",
    [
        tool("read", path="spec/spec.v1.json"),
        tool("bash", command="cat spec.v1.json"),
        tool("bash", command="grep -r goal ."),
        tool("grep", pattern="goal"),
        tool("write", path="x", content="y"),
        tool("edit", path="x"),
        tool("ls"),
        tool("find"),
    ],
    ids=lambda c: c.name,
)
def test_every_normal_tool_is_blocked_before_attestation(world: ChildWorld, call: Any) -> None:
    child = world.child()
    (message,) = child.assistant_message([call])
    assert result_texts(message) == [GUARD_REASON]
    assert child.executed == []


def test_custom_and_later_registered_tools_are_blocked(world: ChildWorld) -> None:
    child = world.child()
    child.register_tool_later("mcp_browser")
    child.register_tool_later("squad")
    messages = child.assistant_message([tool("mcp_browser", url="x"), tool("squad", goal="x")])
    assert [result_texts(m) for m in messages] == [[GUARD_REASON], [GUARD_REASON]]
    assert child.executed == []


def test_normal_sibling_of_reads_in_one_parallel_message_is_blocked(world: ChildWorld) -> None:
    child = world.child()
    messages = child.assistant_message([*(read(i) for i in range(COUNT)), tool("bash")])
    assert messages[-1]["isError"] is True
    assert result_texts(messages[-1]) == [GUARD_REASON]
    assert child.executed == []
    assert world.attestation_valid(), "the reads themselves executed and were delivered"
    (after,) = child.assistant_message([tool("bash", call_id="next-turn")])
    assert after["isError"] is False
    assert child.executed_names() == ["bash"]


def test_reads_pinned_at_once_all_count_on_a_real_file_system(world: ChildWorld) -> None:
    """Every read of one message holds its open, fstat-pinned descriptor on the canonical file
    while its siblings open theirs; on a real file system no such open disturbs another read."""
    if world.emulated:
        pytest.skip("pyfakefs moves a file's ctime on every open: its children read in turn")
    posix_adapter()  # skips on Windows, where the interleaving adapter does not exist
    pinned_together = threading.Barrier(COUNT, timeout=60)  # the timeout is a hang guard only
    waited = threading.local()
    met = threading.Event()

    def meet(block: int) -> None:
        # Before the first block of each execution's canonical read: its descriptor is pinned.
        # Reads after all have met (a delivery's fresh read at its commit) pass straight on.
        if (
            threading.current_thread() is threading.main_thread()
            or getattr(waited, "done", False)
            or met.is_set()
        ):
            return
        waited.done = True
        pinned_together.wait()
        met.set()

    fs = _fs_worlds.InterleavingPosix()
    fs.before_read = meet
    messages = read_all(attrs.evolve(world, fs=fs).child())
    assert [message["isError"] for message in messages] == [False] * COUNT
    assert world.attestation_valid()


def test_sibling_executions_overlap_except_over_pyfakefs(
    world: ChildWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As Pi does, the harness runs one message's calls concurrently; over pyfakefs, which is
    not thread-safe, one at a time (overlapping reads there fail on its ctime bumps)."""
    in_flight, peak, guard = 0, 0, threading.Lock()
    all_in_flight = threading.Barrier(COUNT, timeout=60)  # the timeout is a hang guard only
    execute = SpecChildRole.execute_tool

    def observed(
        role: SpecChildRole, tool_call_id: str, tool_name: str, params: object
    ) -> ToolResult:
        nonlocal in_flight, peak
        with guard:
            in_flight += 1
            peak = max(peak, in_flight)
        try:
            if world.emulated:
                time.sleep(0.01)  # room for a sibling to start, were executions not in turn
            else:
                all_in_flight.wait()
            return execute(role, tool_call_id, tool_name, params)
        finally:
            with guard:
                in_flight -= 1

    monkeypatch.setattr(SpecChildRole, "execute_tool", observed)
    assert not any(message["isError"] for message in read_all(world.child()))
    assert peak == (1 if world.emulated else COUNT)


def test_guard_fails_closed_when_it_cannot_decide(world: ChildWorld) -> None:
    child = world.child()
    read_all(child)
    canonical = world.canonical_path()
    os.chmod(canonical, 0o600)
    with open(canonical, "r+b") as handle:
        handle.write(b" ")
    (message,) = child.assistant_message([tool("bash")])
    assert message["isError"] is True


def test_a_read_after_the_canonical_file_changed_fails_although_it_was_read_before(
    world: ChildWorld,
) -> None:
    # What is reused between reads is only the rendering of bytes verified again each time.
    child = world.child()
    child.assistant_message([read(0)])
    canonical = world.canonical_path()
    os.chmod(canonical, 0o600)
    with open(canonical, "r+b") as handle:
        handle.seek(10)
        handle.write(b"X")
    (message,) = child.assistant_message([read(0, call_id="again")])
    assert message["isError"] is True
    assert "integrity" in result_texts(message)[0]
