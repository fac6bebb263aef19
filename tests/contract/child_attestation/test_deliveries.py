"""Deliveries count when they settle (Pi's next model call): one fresh canonical read and
one durable write for a message's group."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from application.canonical import CanonicalIntegrityError
from application.child.role import GUARD_REASON
from application.ledger_files import ATTESTATION_FILE, STATE_FILE
from tests.contract.child_attestation.world import COUNT, ChildWorld, read_all
from tests.fakes.faulting_filesystem import RecordingFileSystem
from tests.fakes.pi_harness import read, result_texts, tool


def test_the_deliveries_of_one_message_commit_as_one_group(world: ChildWorld) -> None:
    # One fresh canonical read and one durable progress write for all of them.
    fs = RecordingFileSystem(world.fs)
    child = world.child_with_one_role(fs=fs)
    fs.calls.clear()  # what the session start read
    read_all(child)
    canonical = world.canonical_path()
    reads = [
        call for call in fs.calls if call.operation == "read_stable" and call.path == canonical
    ]
    assert len(reads) == COUNT + 1  # each execution's own, then the group's fresh read
    assert [call.path for call in fs.calls if call.operation == "write_atomic"] == [
        world.path(STATE_FILE),
        world.path(ATTESTATION_FILE),
    ]
    assert world.attestation_valid()


def test_message_end_commits_nothing_until_the_deliveries_settle(world: ChildWorld) -> None:
    # Pi's ``context`` event before its next model call is when they count (the bridge's end
    # of input, the guard and the bootstrap settle them too).
    child = world.child_with_one_role()
    child.assistant_message([read(0), read(1)], next_model_call=False)
    assert not os.path.exists(world.path(STATE_FILE))
    child.context()
    assert world.recorded_indices() == [0, 1]


def test_a_chunk_s_delivered_at_is_when_its_result_was_delivered_not_when_it_was_committed(
    world: ChildWorld,
) -> None:
    child = world.child_with_one_role()
    before = world.clock.now()
    child.assistant_message([read(0), read(1)], next_model_call=False)
    after = world.clock.now()
    world.clock.advance(7)  # the next model call comes 7 s later
    child.context()
    state = json.loads(Path(world.path(STATE_FILE)).read_bytes())
    stamps = [datetime.fromisoformat(d["deliveredAt"]) for d in state["deliveries"]]
    assert len(stamps) == 2
    assert all(before <= stamp <= after for stamp in stamps), (before, stamps, after)


def test_a_canonical_change_after_message_end_is_caught_by_the_commit_s_fresh_read(
    world: ChildWorld,
) -> None:
    # The fresh read that vouches for a delivery is made after it arrived, not at message_end.
    child = world.child_with_one_role()
    child.assistant_message([read(0)], next_model_call=False)
    world.flip_canonical_byte()
    with pytest.raises(CanonicalIntegrityError):
        child.context()
    assert not os.path.exists(world.path(STATE_FILE))
    assert world.temporaries() == []


def test_deliveries_not_yet_committed_when_the_bridge_dies_count_as_not_read(
    world: ChildWorld,
) -> None:
    # Pi and its bridge killed together after the message_ends, before any settle: the
    # restarted child finds those chunks missing and reads them again (§8, crash before commit).
    child = world.child_with_one_role()
    child.assistant_message([read(0), read(1)], next_model_call=False)
    child.make_role = world.role_on
    child.restart()
    assert not os.path.exists(world.path(STATE_FILE))
    assert f"Missing chunk indices: [{', '.join(map(str, range(COUNT)))}]" in (
        child.system_prompt()
    )


def test_the_guard_counts_only_deliveries_committed_before_this_turn(world: ChildWorld) -> None:
    child = world.child_with_one_role()
    read_all(child, next_model_call=False)
    assert child.role.tool_call("call-bash", "bash", {"command": "true"}).block
    assert not os.path.exists(world.path(ATTESTATION_FILE))
    child.context()  # Pi's next model call
    assert not child.role.tool_call("call-bash-2", "bash", {"command": "true"}).block
    assert world.attestation_valid()


def test_a_tool_beside_the_last_read_stays_blocked_when_pi_runs_the_calls_in_turn(
    world: ChildWorld,
) -> None:
    # Pi runs a message's calls one after another when one of its tools asks for that: the
    # bash call is preflighted after the last read's message_end, and still blocked (§8: normal
    # tools only in a later model turn, after the delivery commits).
    child = world.child_with_one_role()
    child.assistant_message([read(i) for i in range(COUNT - 1)])
    messages = child.assistant_message_in_turn([read(COUNT - 1), tool("bash", command="true")])
    assert messages[1]["isError"] is True
    assert result_texts(messages[1]) == [GUARD_REASON]
    assert child.executed_names() == []
    assert world.attestation_valid()  # the read counted, at the next model call
    child.assistant_message([tool("bash", call_id="later", command="true")])
    assert child.executed_names() == ["bash"]


def test_the_bootstrap_lists_as_missing_only_what_the_deliveries_received_leave(
    world: ChildWorld,
) -> None:
    child = world.child_with_one_role()
    child.assistant_message([read(i) for i in range(1, COUNT)], next_model_call=False)
    assert "Missing chunk indices: [0]" in child.system_prompt()
    assert world.recorded_indices() == list(range(1, COUNT))


def test_a_foreign_progress_file_is_not_judged_before_the_fresh_read_verifies(
    world: ChildWorld,
) -> None:
    # Judging a file this ledger did not write may move it aside (corrupt): only once the
    # commit's fresh read has verified the canonical file.
    child = world.child_with_one_role()
    child.assistant_message([read(0)])
    Path(world.path(STATE_FILE)).write_bytes(b"{not json")
    with pytest.raises(CanonicalIntegrityError):
        child.assistant_message(
            [read(1)], tamper={"call-read-1": world.changing_the_canonical_file()}
        )
    assert Path(world.path(STATE_FILE)).read_bytes() == b"{not json"
    assert [n for n in os.listdir(world.task_dir) if ".corrupt-" in n] == []


def test_a_repeated_delivery_writes_no_attestation_without_a_fresh_read(
    world: ChildWorld,
) -> None:
    # A delivery that changes no coverage still needs its fresh read before the ledger acts
    # on it (here: finalising a complete coverage whose attestation went missing).
    child = world.child_with_one_role()
    read_all(child)
    os.remove(world.path(ATTESTATION_FILE))
    with pytest.raises(CanonicalIntegrityError):
        child.assistant_message(
            [read(0, call_id="again")], tamper={"again": world.changing_the_canonical_file()}
        )
    assert not os.path.exists(world.path(ATTESTATION_FILE))
    world.flip_canonical_byte()  # back to the pinned bytes
    child.assistant_message([read(0, call_id="once-more")])
    assert world.attestation_valid()
