"""Contract §9 child rows: crashes and restarts keep exactly what was committed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from application.ledger_files import ATTESTATION_FILE, STATE_FILE
from tests.contract.child_attestation.world import COUNT, ChildWorld, read_all
from tests.fakes.pi_harness import ChildCrashed, read, tool


def test_execution_without_message_end_counts_nothing(world: ChildWorld) -> None:
    child = world.child()
    with pytest.raises(ChildCrashed):
        child.assistant_message([read(i) for i in range(COUNT)], crash_at="after_execution")
    child.restart()
    missing = ", ".join(str(i) for i in range(COUNT))
    assert f"Missing chunk indices: [{missing}]" in child.system_prompt()


def test_crash_between_message_ends_keeps_only_committed_chunks(world: ChildWorld) -> None:
    # Chunks 0 and 1 were committed at the next model call; chunk 2's message_end came, but
    # Pi died before its next model call: it was never committed and is read again.
    child = world.child()
    child.assistant_message([read(0), read(1)])
    with pytest.raises(ChildCrashed):
        child.assistant_message([read(i) for i in range(2, COUNT)], crash_at=1)
    child.restart()
    remaining = ", ".join(str(i) for i in range(2, COUNT))
    assert f"Missing chunk indices: [{remaining}]" in child.system_prompt()
    child.assistant_message([read(i) for i in range(2, COUNT)])
    assert world.attestation_valid()
    assert world.attestation()["chunks"][0]["toolCallId"] == "call-read-0"


def test_complete_session_resumed_in_a_new_process_needs_no_reread(world: ChildWorld) -> None:
    child = world.child()
    read_all(child)
    child.restart()
    (message,) = child.assistant_message([tool("bash", call_id="after-restart")])
    assert message["isError"] is False
    assert "all tools are available" in child.system_prompt()


def test_resumed_complete_session_is_blocked_if_the_canonical_file_changed(
    world: ChildWorld,
) -> None:
    child = world.child()
    read_all(child)
    canonical = world.canonical_path()
    os.chmod(canonical, 0o600)
    with open(canonical, "r+b") as handle:
        handle.seek(10)
        handle.write(b"X")
    child.restart()
    assert child.assistant_message([tool("bash")])[0]["isError"] is True
    assert "failed verification" in child.system_prompt()


def test_all_chunks_committed_but_no_attestation_is_finalised_on_restart(world: ChildWorld) -> None:
    child = world.child()
    read_all(child)
    os.remove(world.path(ATTESTATION_FILE))
    assert child.assistant_message([tool("bash")])[0]["isError"] is True
    child.restart()
    assert world.attestation_valid()
    assert child.assistant_message([tool("bash", call_id="b2")])[0]["isError"] is False


def test_corrupt_progress_is_moved_aside_and_reading_restarts(world: ChildWorld) -> None:
    child = world.child()
    child.assistant_message([read(0)])
    Path(world.path(STATE_FILE)).write_bytes(b"{not json")
    child.restart()
    aside = [n for n in os.listdir(world.task_dir) if n.startswith(f"{STATE_FILE}.corrupt-")]
    assert len(aside) == 1
    assert Path(world.task_dir, aside[0]).read_bytes() == b"{not json"
    assert (
        f"Missing chunk indices: [{', '.join(str(i) for i in range(COUNT))}]"
        in child.system_prompt()
    )


def test_tampered_attestation_is_archived_and_the_task_must_read_again(world: ChildWorld) -> None:
    child = world.child()
    read_all(child)
    document = world.attestation()
    document["completedAt"] = "not a time"
    Path(world.path(ATTESTATION_FILE)).write_text(json.dumps(document))
    assert child.assistant_message([tool("bash")])[0]["isError"] is True
    child.restart()
    assert not os.path.exists(world.path(ATTESTATION_FILE))
    assert any(n.startswith(f"{ATTESTATION_FILE}.invalid-") for n in os.listdir(world.task_dir))
    read_all(child)
    assert world.attestation_valid()


def test_each_task_has_independent_coverage(world: ChildWorld) -> None:
    read_all(world.child("build"))
    other = world.child("qa")
    assert other.assistant_message([tool("bash")])[0]["isError"] is True
    assert not os.path.exists(os.path.join(world.published.squad_dir, "qa", ATTESTATION_FILE))


def test_a_session_start_removes_the_temp_files_a_dead_writer_left(world: ChildWorld) -> None:
    # Killed between its temp file's fsync and the rename: the next session sweeps it (under
    # the task lock every ledger writer holds), and what was committed stays.
    child = world.child()
    child.assistant_message([read(0)])
    for name in (f".{STATE_FILE}.tmp.4242.0123456789abcdef", f".{ATTESTATION_FILE}.tmp.1.ab"):
        Path(world.path(name)).write_bytes(b"{}")
    child.restart()
    assert world.temporaries() == []
    assert world.recorded_indices() == [0]
