"""The fault-injecting wrapper the crash tests put around a file system
(``tests/fakes/faulting_filesystem.FaultingFileSystem``): which call it fails or kills at, and
that the production adapters have no such seam."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from adapters.fs.platform import native_file_system
from application.ports import FileSystem
from tests.contract._fs_worlds import World
from tests.fakes.faulting_filesystem import FAULTABLE_OPERATIONS, FaultingFileSystem, FaultPoint
from tests.host_fs import posix_file_system

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def test_every_file_system_method_can_be_targeted_by_a_fault() -> None:
    methods = {
        name
        for name in dir(FileSystem)
        if not name.startswith("_") and callable(getattr(FileSystem, name))
    }
    assert methods == FAULTABLE_OPERATIONS


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("rename_no_replace:1:kill", FaultPoint("rename_no_replace", 1, "kill")),
        ("write_atomic:3:kill-after", FaultPoint("write_atomic", 3, "kill-after")),
        ("fsync_dir:12:oserror", FaultPoint("fsync_dir", 12, "oserror")),
    ],
)
def test_fault_point_parses_operation_call_number_and_action(
    text: str, expected: FaultPoint
) -> None:
    assert FaultPoint.parse(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "write_atomic",
        "write_atomic:1",
        "write_atomic:0:kill",
        "write_atomic:-1:kill",
        "write_atomic:x:kill",
        "write_atomic:1:explode",
        "not_an_operation:1:kill",
        "write_atomic:1:kill:extra",
    ],
)
def test_malformed_fault_point_is_an_error_not_silently_ignored(text: str) -> None:
    with pytest.raises(ValueError, match="fault point"):
        FaultPoint.parse(text)


def test_a_fault_point_prints_as_it_is_parsed() -> None:
    assert str(FaultPoint.parse("write_atomic:3:kill-after")) == "write_atomic:3:kill-after"


def _faulting(world: World, point: str) -> FaultingFileSystem:
    return FaultingFileSystem(world.adapter(), FaultPoint.parse(point))


def test_oserror_fault_fails_only_the_nth_call_and_before_the_operation(world: World) -> None:
    adapter = _faulting(world, "create_file_exclusive:2:oserror")
    adapter.create_file_exclusive(world.path("one"), b"1", 0o600)
    with pytest.raises(OSError, match="injected fault") as caught:
        adapter.create_file_exclusive(world.path("two"), b"2", 0o600)
    adapter.create_file_exclusive(world.path("three"), b"3", 0o600)

    assert caught.value.errno == errno.EIO
    assert not adapter.exists(world.path("two"))
    assert adapter.list_dir(world.root) == ["one", "three"]


def test_fault_for_another_operation_does_not_fire(world: World) -> None:
    adapter = _faulting(world, "rename_no_replace:1:oserror")
    adapter.create_file_exclusive(world.path("one"), b"1", 0o600)
    adapter.write_atomic(world.path("two"), b"2")
    assert adapter.list_dir(world.root) == ["one", "two"]


def test_the_fault_counts_calls_through_the_port_only(world: World) -> None:
    # write_atomic syncs its directory inside the adapter: that is not a fsync_dir call.
    adapter = _faulting(world, "fsync_dir:1:oserror")
    adapter.write_atomic(world.path("one"), b"1")
    with pytest.raises(OSError, match="injected fault"):
        adapter.fsync_dir(world.root)
    assert adapter.steps() == [("write_atomic", 1), ("fsync_dir", 1)]
    assert adapter.failed_steps() == {("fsync_dir", 1)}


def test_the_production_adapters_have_no_fault_seam(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The variable the adapters once read: setting it now changes nothing.
    monkeypatch.setenv("PI_SQUAD_FAULT", "fsync_dir:1:oserror")
    native_file_system().fsync_dir(str(tmp_path))
    posix_file_system().fsync_dir(str(tmp_path))


_CRASH_SCRIPT = textwrap.dedent(
    """
    import sys
    from adapters.fs.posix import PosixFileSystem
    from tests.fakes.faulting_filesystem import FaultingFileSystem, FaultPoint

    root = sys.argv[1]
    fs = FaultingFileSystem(PosixFileSystem(), FaultPoint.parse(sys.argv[2]))
    fs.make_dir_exclusive(root + "/staging", 0o700)
    fs.create_file_exclusive(root + "/staging/spec.json", b"canonical", 0o600)
    fs.write_atomic(root + "/staging/squad.json", b"{}")
    fs.fsync_dir(root + "/staging")
    fs.rename_no_replace(root + "/staging", root + "/final")
    fs.mark_read_only(root + "/final/spec.json")
    print("completed")
    """
)


def _run_crash_script(root: Path, fault: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _CRASH_SCRIPT, str(root), fault],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def _killed_by(root: Path, fault: str) -> subprocess.CompletedProcess[str]:
    """The crash script run with a kill ``fault``, which must have killed it (SIGKILL)."""
    result = _run_crash_script(root, fault)
    assert result.returncode == -9, result.stderr
    return result


_POSIX_SIGNALS = pytest.mark.skipif(
    os.name != "posix", reason="SIGKILL exit status is a POSIX notion"
)


@_POSIX_SIGNALS
def test_kill_fault_stops_the_process_before_the_operation(tmp_path: Path) -> None:
    result = _killed_by(tmp_path, "rename_no_replace:1:kill")
    assert "completed" not in result.stdout
    assert (tmp_path / "staging" / "spec.json").read_bytes() == b"canonical"
    assert not (tmp_path / "final").exists()


@_POSIX_SIGNALS
def test_kill_after_fault_stops_the_process_after_the_operation(tmp_path: Path) -> None:
    _killed_by(tmp_path, "rename_no_replace:1:kill-after")
    assert (tmp_path / "final" / "spec.json").read_bytes() == b"canonical"
    assert not (tmp_path / "staging").exists()
    assert stat.S_IMODE((tmp_path / "final" / "spec.json").stat().st_mode) == 0o600


@_POSIX_SIGNALS
def test_kill_fault_counts_calls_of_its_own_operation(tmp_path: Path) -> None:
    _killed_by(tmp_path, "fsync_dir:1:kill")
    # write_atomic fsyncs its directory internally; that is not a call of fsync_dir.
    assert (tmp_path / "staging" / "squad.json").read_bytes() == b"{}"
    assert not (tmp_path / "final").exists()


def test_the_crash_script_completes_when_its_fault_never_fires(tmp_path: Path) -> None:
    result = _run_crash_script(tmp_path, "remove_tree:1:kill")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "completed"
    assert stat.S_IMODE((tmp_path / "final" / "spec.json").stat().st_mode) == 0o400
