"""The workflow host over the file-system port: a missing state file reads as none, a file that
cannot be read or written safely is ``StateInvalid`` (never an unhandled error), the state is
written by the atomic write under owner-only directories, and time is the clock's."""

from __future__ import annotations

import errno

import pytest

from domain.flows.workflow_state import StateInvalid
from tests.fakes.clock import FakeClock
from tests.fakes.filesystem import InMemoryFileSystem
from tests.fakes.workflow import PROJECT, Person, host


def test_a_missing_state_file_reads_as_none() -> None:
    assert host(InMemoryFileSystem(), FakeClock()).load("state.json") is None


def test_the_state_is_written_atomically_under_owner_only_directories() -> None:
    fs = InMemoryFileSystem()
    files = host(fs, FakeClock())
    files.save(".pi/flow-workflows/w.json", b"{}")
    assert fs.read(f"{PROJECT}/.pi/flow-workflows/w.json") == b"{}"
    assert fs.mode(f"{PROJECT}/.pi/flow-workflows/w.json") == 0o600
    assert fs.mode(f"{PROJECT}/.pi") == 0o700
    assert [call.operation for call in fs.calls] == ["ensure_dir", "write_atomic"]
    assert files.load(".pi/flow-workflows/w.json") == b"{}"


def test_a_state_path_that_is_a_symlink_is_refused() -> None:
    fs = InMemoryFileSystem()
    fs.add_file("/elsewhere.json", b"{}")
    fs.add_symlink(f"{PROJECT}/state.json", "/elsewhere.json")
    with pytest.raises(StateInvalid, match="symlink"):
        host(fs, FakeClock()).load("state.json")


def test_a_failed_write_is_state_invalid() -> None:
    fs = InMemoryFileSystem()
    fs.fail("write_atomic", error=OSError(errno.ENOSPC, "no space"))
    with pytest.raises(StateInvalid, match="could not be written"):
        host(fs, FakeClock()).save("state.json", b"{}")


def test_time_is_the_clocks_and_the_person_is_asked_only_when_there_is_one() -> None:
    clock = FakeClock()
    expected = int(clock.current.timestamp() * 1000)
    person = Person([False])
    files = host(InMemoryFileSystem(), clock, person)
    assert files.now_ms() == expected
    assert files.ask("t", "m") is False
    assert person.asked == [("t", "m")]
    assert host(InMemoryFileSystem(), clock).ask("t", "m") is None
