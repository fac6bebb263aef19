"""Contract §5 destination steps (exclusive creation, atomic writes, no-replace rename, read-only
canonical file) against every file-system world, and the fault-injecting wrapper the crash
tests put around them (``tests/fakes/filesystem.FaultingFileSystem``)."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.fs.platform import file_system_for, native_file_system
from adapters.fs.windows import WindowsFileSystem
from application.ports import FileSystem
from tests.contract._fs_worlds import (
    POSIX_KINDS,
    REAL_KIND,
    WINDOWS_KINDS,
    World,
    in_worlds,
)
from tests.fakes.filesystem import FAULTABLE_OPERATIONS, FaultingFileSystem, FaultPoint
from tests.host_fs import posix_adapter, posix_file_system

PROJECT_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=[0o000, 0o022, 0o077, 0o777])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """Runs the test under each umask (the fake worlds keep their own umask)."""
    mask: int = request.param
    previous = os.umask(mask)
    try:
        yield mask
    finally:
        os.umask(previous)


def contents(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


# ---- create_file_exclusive ----------------------------------------------------------------


def test_create_file_exclusive_writes_the_exact_bytes(world: World) -> None:
    path = world.path("spec.v1.json")
    data = b'{ "goal" : "x" }\n\n'
    world.adapter().create_file_exclusive(path, data, 0o600)
    assert contents(path) == data


@in_worlds(*POSIX_KINDS)
def test_create_file_exclusive_sets_mode_0600_whatever_the_umask(world: World, umask: int) -> None:
    path = world.path("spec.v1.json")
    world.adapter().create_file_exclusive(path, b"x", 0o600)
    assert world.mode(path) == 0o600


def test_create_file_exclusive_refuses_an_existing_file_and_leaves_it_alone(world: World) -> None:
    path = world.write("spec.v1.json", b"first")
    with pytest.raises(FileExistsError):
        world.adapter().create_file_exclusive(path, b"second", 0o600)
    assert contents(path) == b"first"


def test_create_file_exclusive_refuses_a_dangling_symlink(world: World) -> None:
    outside = world.path("outside")
    link = world.symlink(outside, "spec.v1.json")
    with pytest.raises(OSError) as caught:  # noqa: PT011 (errno checked below)
        world.adapter().create_file_exclusive(link, b"x", 0o600)
    # The emulator reports O_NOFOLLOW's ELOOP where POSIX reports O_EXCL's EEXIST.
    refusals = {errno.EEXIST, errno.ELOOP} if world.kind == "posix-fake" else {errno.EEXIST}
    assert caught.value.errno in refusals
    assert not os.path.lexists(outside)


# ---- write_atomic -------------------------------------------------------------------------


def test_write_atomic_creates_then_replaces_and_leaves_no_temporary_file(world: World) -> None:
    directory = world.mkdir("squad")
    path = world.path("squad/squad.json")
    adapter = world.adapter()

    adapter.write_atomic(path, b"one")
    adapter.write_atomic(path, b"two, longer")

    assert contents(path) == b"two, longer"
    assert adapter.list_dir(directory) == ["squad.json"]


@in_worlds(*POSIX_KINDS)
def test_write_atomic_file_is_private_to_the_owner_whatever_the_umask(
    world: World, umask: int
) -> None:
    path = world.path("state.json")
    world.adapter().write_atomic(path, b"{}")
    assert world.mode(path) == 0o600


def test_failed_write_atomic_removes_its_temporary_file(world: World) -> None:
    world.mkdir("target")
    world.write("target/occupant", b"keeps the directory non-empty")
    adapter = world.adapter()

    with pytest.raises(OSError):  # noqa: PT011 (the errno differs by system; any refusal will do)
        adapter.write_atomic(world.path("target"), b"cannot replace a directory")

    assert adapter.list_dir(world.root) == ["target"]


def test_remove_temporaries_removes_only_the_temp_files_write_atomic_leaves_for_that_path(
    world: World,
) -> None:
    world.write("state.json", b"kept")
    world.write(".state.json.tmp.4242.0123456789abcdef", b"a writer died here")
    world.write(".state.json.tmp.99.fedcba9876543210", b"and here")
    world.write(".other.json.tmp.4242.0123456789abcdef", b"another record's")
    world.write("state.json.tmp.1.x", b"not write_atomic's name")
    world.mkdir(".state.json.tmp.dir")
    adapter = world.adapter()
    assert adapter.remove_temporaries(world.path("state.json")) == 2
    assert adapter.list_dir(world.root) == sorted(
        [
            ".other.json.tmp.4242.0123456789abcdef",
            ".state.json.tmp.dir",
            "state.json",
            "state.json.tmp.1.x",
        ]
    )
    assert adapter.remove_temporaries(world.path("missing-dir/state.json")) == 0


# ---- rename_no_replace --------------------------------------------------------------------


def _staged(world: World) -> tuple[str, str]:
    staging = world.mkdir("sq.creating.1234")
    world.write("sq.creating.1234/spec.json", b"staged")
    return staging, world.path("sq")


def test_rename_no_replace_moves_a_staged_directory(world: World) -> None:
    staging, final = _staged(world)
    world.adapter().rename_no_replace(staging, final)
    assert contents(world.path("sq/spec.json")) == b"staged"
    assert not os.path.lexists(staging)


def test_rename_no_replace_refuses_an_existing_empty_directory(world: World) -> None:
    staging, final = _staged(world)
    os.mkdir(final)
    with pytest.raises(FileExistsError):
        world.adapter().rename_no_replace(staging, final)
    assert os.listdir(final) == []
    assert contents(world.path("sq.creating.1234/spec.json")) == b"staged"


def test_rename_no_replace_refuses_an_existing_file(world: World) -> None:
    staging, final = _staged(world)
    with open(final, "wb") as handle:
        handle.write(b"occupant")
    with pytest.raises(FileExistsError):
        world.adapter().rename_no_replace(staging, final)
    assert contents(final) == b"occupant"


def test_rename_no_replace_refuses_a_dangling_symlink(world: World) -> None:
    staging, final = _staged(world)
    os.symlink(world.path("nowhere"), final)
    with pytest.raises(FileExistsError):
        world.adapter().rename_no_replace(staging, final)
    assert os.path.islink(final)


@in_worlds(REAL_KIND)
def test_lexists_fallback_also_refuses_an_existing_empty_directory(world: World) -> None:
    staging, final = _staged(world)
    os.mkdir(final)
    with pytest.raises(FileExistsError):
        posix_file_system(kernel_no_replace=False).rename_no_replace(staging, final)
    posix_file_system(kernel_no_replace=False).rename_no_replace(staging, world.path("other"))
    assert contents(world.path("other/spec.json")) == b"staged"


@in_worlds(*POSIX_KINDS)
def test_rename_no_replace_of_a_missing_source_is_file_not_found(world: World) -> None:
    with pytest.raises(FileNotFoundError):
        world.adapter().rename_no_replace(world.path("absent"), world.path("target"))


# ---- directories ---------------------------------------------------------------------------


@in_worlds(*POSIX_KINDS)
def test_make_dir_exclusive_sets_exactly_0700_whatever_the_umask(world: World, umask: int) -> None:
    path = world.path("sq.creating.1")
    world.adapter().make_dir_exclusive(path, 0o700)
    assert world.mode(path) == 0o700


def test_make_dir_exclusive_refuses_anything_already_there(world: World) -> None:
    adapter = world.adapter()
    existing = world.mkdir("d")
    with pytest.raises(FileExistsError):
        adapter.make_dir_exclusive(existing, 0o700)
    with pytest.raises(FileExistsError):
        adapter.make_dir_exclusive(world.write("f", b""), 0o700)


def test_ensure_dir_creates_parents_and_is_idempotent(world: World) -> None:
    path = world.path("a/b/c")
    adapter = world.adapter()
    adapter.ensure_dir(path, 0o700)
    adapter.ensure_dir(path, 0o700)
    assert adapter.is_dir(path)


def test_ensure_dir_refuses_a_file_in_the_way(world: World) -> None:
    with pytest.raises(FileExistsError):
        world.adapter().ensure_dir(world.write("f", b""), 0o700)


def test_fsync_dir_accepts_a_directory(world: World) -> None:
    world.adapter().fsync_dir(world.mkdir("d"))


@in_worlds(*POSIX_KINDS)
def test_fsync_dir_of_a_missing_directory_fails(world: World) -> None:
    with pytest.raises(FileNotFoundError):
        world.adapter().fsync_dir(world.path("absent"))


@in_worlds(*WINDOWS_KINDS)
def test_fsync_dir_is_a_no_op_on_windows(world: World) -> None:
    world.adapter().fsync_dir(world.path("absent"))


# ---- read-only canonical file ----------------------------------------------------------------


@in_worlds(*POSIX_KINDS)
def test_mark_read_only_gives_mode_0400(world: World) -> None:
    path = world.write("spec.v1.json", b"x")
    world.adapter().mark_read_only(path)
    assert world.mode(path) == 0o400


@in_worlds(*WINDOWS_KINDS)
def test_mark_read_only_sets_the_windows_read_only_bit(world: World) -> None:
    path = world.write("spec.v1.json", b"x")
    world.adapter().mark_read_only(path)
    assert world.mode(path) & stat.S_IWRITE == 0
    with pytest.raises(PermissionError):
        open(path, "wb").close()


# ---- inspection ------------------------------------------------------------------------------


def test_list_dir_is_sorted_and_missing_directory_is_file_not_found(world: World) -> None:
    for name in ("b", "a", "C", "a-1"):
        world.write(name, b"")
    adapter = world.adapter()
    assert adapter.list_dir(world.root) == sorted(["b", "a", "C", "a-1"])
    with pytest.raises(FileNotFoundError):
        adapter.list_dir(world.path("absent"))


def test_is_dir_is_true_only_for_a_real_directory(world: World) -> None:
    adapter = world.adapter()
    directory = world.mkdir("d")
    assert adapter.is_dir(directory)
    assert not adapter.is_dir(world.symlink(directory, "link-to-d"))
    assert not adapter.is_dir(world.write("f", b""))
    assert not adapter.is_dir(world.path("absent"))
    assert not adapter.is_dir(world.path("f/beneath-a-file"))


@in_worlds("windows-fake")
def test_is_dir_is_false_for_a_junction(world: World) -> None:
    directory = world.mkdir("junction")
    world.mark_reparse_point(directory)
    assert not world.adapter().is_dir(directory)


def test_exists_sees_a_dangling_symlink(world: World) -> None:
    adapter = world.adapter()
    assert adapter.exists(world.symlink(world.path("nowhere"), "dangling"))
    assert adapter.exists(world.write("f", b""))
    assert not adapter.exists(world.path("absent"))


# ---- remove_tree -----------------------------------------------------------------------------


def test_remove_tree_removes_everything_including_a_read_only_file(world: World) -> None:
    adapter = world.adapter()
    world.mkdir("sq")
    world.mkdir("sq/spec")
    canonical = world.write("sq/spec/spec.v1.json", b"x")
    adapter.mark_read_only(canonical)
    world.write("sq/squad.json", b"{}")

    adapter.remove_tree(world.path("sq"))

    assert not adapter.exists(world.path("sq"))


def test_remove_tree_of_a_missing_tree_is_a_no_op(world: World) -> None:
    world.adapter().remove_tree(world.path("absent"))


def test_remove_tree_does_not_follow_a_symlink_inside_the_tree(world: World) -> None:
    outside = world.mkdir("outside")
    kept = world.write("outside/keep", b"kept")
    world.mkdir("sq")
    world.symlink(outside, "sq/escape")

    world.adapter().remove_tree(world.path("sq"))

    assert contents(kept) == b"kept"
    assert os.path.isdir(outside)


def test_remove_tree_refuses_a_symlink_at_the_root(world: World) -> None:
    outside = world.mkdir("outside")
    kept = world.write("outside/keep", b"kept")
    link = world.symlink(outside, "sq")
    with pytest.raises(OSError):  # noqa: PT011 (shutil's own refusal carries no errno)
        world.adapter().remove_tree(link)
    assert contents(kept) == b"kept"


# ---- every method insists on native absolute paths ---------------------------------------


def test_write_operations_refuse_a_relative_path(world: World) -> None:
    adapter = world.adapter()
    with pytest.raises(ValueError, match="absolute"):
        adapter.create_file_exclusive("relative.json", b"x", 0o600)
    with pytest.raises(ValueError, match="absolute"):
        adapter.rename_no_replace(world.path("a"), "b")
    with pytest.raises(ValueError, match="absolute"):
        adapter.make_dir_exclusive("d", 0o700)


# ---- fault injection ----------------------------------------------------------------------


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
    from tests.fakes.filesystem import FaultingFileSystem, FaultPoint

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


# ---- choosing the adapter ----------------------------------------------------------------------


def test_adapter_is_chosen_by_os_name() -> None:
    if os.name == "posix":  # the POSIX adapter cannot be imported on Windows
        assert isinstance(file_system_for("posix"), posix_adapter())
    assert isinstance(file_system_for("nt"), WindowsFileSystem)
    assert file_system_for("nt").flavour == "windows"
    with pytest.raises(RuntimeError, match="java"):
        file_system_for("java")


def test_native_file_system_matches_the_host() -> None:
    expected = "windows" if os.name == "nt" else "posix"
    assert native_file_system().flavour == expected


# ---- append_bytes (red-team issue 11, finding 4) --------------------------------------------


@pytest.mark.parametrize(
    ("existing", "expected"),
    [
        (None, b"new\n"),
        (b"", b"new\n"),
        (b"whole\n", b"whole\nnew\n"),
        (b'whole\n{"torn": ', b'whole\n{"torn": \nnew\n'),
    ],
    ids=["missing", "empty", "whole-last-line", "torn-last-line"],
)
def test_append_starts_a_new_line_after_a_torn_last_line(
    world: World, existing: bytes | None, expected: bytes
) -> None:
    path = world.path("log.jsonl") if existing is None else world.write("log.jsonl", existing)

    world.adapter().append_bytes(path, b"new\n")

    assert contents(path) == expected
