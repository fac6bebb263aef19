"""The ledger's remembered coverage is reused only while the progress file keeps its identity:
a commit by another process, a forged replacement or a rewrite in place is judged again."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from application.canonical import CanonicalIntegrityError
from application.ledger_files import ATTESTATION_FILE, STATE_FILE
from tests.contract.child_attestation.world import ChildWorld, read_all
from tests.fakes.pi_harness import read


def test_a_commit_by_another_process_is_seen_by_the_next_commit(world: ChildWorld) -> None:
    # Two children of one task (say a restarted process next to a lingering one): each ledger
    # remembers what it last wrote; the other's replacement must not be overwritten by it.
    first, second = world.child(), world.child()
    first.assistant_message([read(0)])
    second.assistant_message([read(1)])
    first.assistant_message([read(2)])
    assert world.recorded_indices() == [0, 1, 2]


def test_a_progress_file_forged_by_replacement_is_judged_again(world: ChildWorld) -> None:
    child = world.child()
    child.assistant_message([read(0)])
    forged = Path(world.path("forged.json"))
    forged.write_text(json.dumps(world.forged_progress(), separators=(",", ":")) + "\n")
    os.replace(forged, world.path(STATE_FILE))
    child.assistant_message([read(1)])
    assert "invalid" in child.system_prompt()
    read_all(child)
    assert not os.path.exists(world.path(ATTESTATION_FILE))


def test_a_same_size_rewrite_in_place_is_judged_again(world: ChildWorld) -> None:
    # The hardest foreign change to see: same inode, same size, mtime put back. Its ctime moves
    # (no user can set it), so the identity differs and the forged record is read and refused.
    child = world.child()
    child.assistant_message([read(0)])
    state_path = Path(world.path(STATE_FILE))
    before = os.stat(state_path)
    original = state_path.read_bytes()
    sha = json.loads(original)["deliveries"][0]["sha256"]
    forged = original.replace(sha.encode(), ("f" * 64).encode())
    assert len(forged) == len(original)
    assert forged != original
    with open(state_path, "r+b") as handle:
        handle.write(forged)
    os.utime(state_path, ns=(before.st_atime_ns, before.st_mtime_ns))
    child.assistant_message([read(1)])
    assert "invalid" in child.system_prompt()


def test_progress_moved_aside_by_the_parent_is_not_remembered(world: ChildWorld) -> None:
    child = world.child()
    child.assistant_message([read(0), read(1)])
    os.rename(world.path(STATE_FILE), world.path(f"{STATE_FILE}.superseded-test"))
    child.assistant_message([read(2)])
    assert world.recorded_indices() == [2]


def test_a_canonical_change_before_the_commit_commits_nothing_and_leaves_no_temp_file(
    world: ChildWorld,
) -> None:
    # The fresh canonical read of a delivery's commit fails: Pi's ``context`` answer says why
    # (the harness raises it),
    # the progress file is as it was and nothing is left beside it.
    child = world.child()
    child.assistant_message([read(0)])
    state_path = Path(world.path(STATE_FILE))
    before = state_path.read_bytes()
    with pytest.raises(CanonicalIntegrityError):
        child.assistant_message(
            [read(1)], tamper={"call-read-1": world.changing_the_canonical_file()}
        )
    assert state_path.read_bytes() == before
    assert world.temporaries() == []
    assert not os.path.exists(world.path(ATTESTATION_FILE))
