"""The Landlock wrapper refuses bad arguments and then never runs the command; a confined child
cannot signal, reach an abstract socket or make a device node outside its domain."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.landlock.support import (
    SUPPORT,
    isolation,
    marker_command,
    operations,
    start,
    wrapper,
)

pytestmark = pytest.mark.skipif(
    SUPPORT.mode != "landlock", reason=f"Landlock not enforceable here: {SUPPORT.reason}"
)


@pytest.mark.parametrize(
    ("arguments", "mentioned"),
    [
        (["--write", "granted"], "not absolute"),
        (["--write", "./granted"], "not absolute"),
        (["--write", "/nonexistent/pi-squad-test"], "does not exist"),
        (["--write"], "not absolute: '--'"),
        (["--exec", "/tmp"], "unexpected argument"),
        (["--read", "usr"], "not absolute"),
        (["--read", "/nonexistent/pi-squad-test"], "does not exist"),
        # A read allowlist without the command's program: it cannot be executed.
        (["--read", "/tmp"], "cannot run 'touch': Permission denied"),
    ],
)
def test_the_wrapper_refuses_bad_paths_with_126(
    world: Path, arguments: list[str], mentioned: str
) -> None:
    code, err = wrapper(*arguments, "--", *marker_command(world), cwd=world)
    assert code == 126
    assert mentioned in err
    assert err.count("\n") == 1
    assert err.endswith("the command was not run\n")
    assert not (world / "granted" / "ran").exists()


def test_the_wrapper_refuses_a_missing_separator_or_command(world: Path) -> None:
    assert wrapper("--write", str(world), *marker_command(world), cwd=world)[0] == 126
    code, err = wrapper("--write", str(world), "--", cwd=world)
    assert (code, "no command" in err) == (126, True)
    assert not (world / "granted" / "ran").exists()


def test_the_wrapper_reports_a_command_it_cannot_run(world: Path) -> None:
    code, err = wrapper("--write", str(world), "--", "pi-squad-no-such-command", cwd=world)
    assert code == 126
    assert "cannot run 'pi-squad-no-such-command'" in err


@pytest.mark.parametrize(
    ("fake_module", "mentioned"),
    [
        ("raise ImportError('landlockpy is broken')", "landlockpy is broken"),
        ("def abi_version():\n    return 0\n", "Landlock is not available"),
        ("def abi_version():\n    return 2\n", "cannot deny truncate"),
        (
            "import errno\n"
            "def abi_version():\n    raise OSError(errno.EPERM, 'Operation not permitted')\n",
            "cannot confine: Operation not permitted",
        ),
    ],
)
def test_the_wrapper_never_runs_the_command_when_landlock_fails(
    world: Path, tmp_path_factory: pytest.TempPathFactory, fake_module: str, mentioned: str
) -> None:
    shadow = tmp_path_factory.mktemp("shadow")
    (shadow / "landlockpy.py").write_text(fake_module)
    code, err = wrapper(
        "--write", str(world / "granted"), "--", *marker_command(world),
        cwd=world, env={"PYTHONPATH": str(shadow)},
    )  # fmt: skip
    assert code == 126, err
    assert mentioned in err
    assert not (world / "granted" / "ran").exists()


def test_the_working_directory_cannot_replace_the_wrapper(world: Path) -> None:
    """A workspace with its own ``adapters/isolation/landlock_exec.py`` or ``landlockpy.py`` (a
    squad may
    well work on this very project) does not change what confines it."""
    (world / "adapters").mkdir()
    (world / "adapters" / "__init__.py").write_text("")
    unconfined = "import os, sys\nos.execvp(sys.argv[-1], sys.argv[-1:])\n"
    (world / "adapters" / "landlock_exec.py").write_text(unconfined)
    (world / "landlockpy.py").write_text("raise SystemExit('shadow landlockpy imported')\n")
    steps = {"write protected": f"write({str(world / 'protected' / 'f')!r})"}
    results = operations(world, [str(world / "granted")], steps)
    assert results == {"write protected": "EACCES"}


def test_a_confined_child_cannot_signal_a_process_outside_its_domain(world: Path) -> None:
    """From Landlock ABI 6 the child cannot kill the parent that judges it (or a sibling),
    while it can still signal what it started itself."""
    if isolation().abi < 6:
        pytest.skip("signal scoping needs Landlock ABI 6")
    outsider = subprocess.Popen(["sleep", "60"])
    try:
        script = (
            f"kill -0 {outsider.pid} 2>/dev/null && echo outside-reachable || echo outside-denied; "
            "sleep 30 & own=$!; kill $own && echo own-killed"
        )
        argv = isolation().confine(["bash", "-c", script], writable=["/dev/null"])
        code, out, err = start(argv, cwd=world)
        assert code == 0, err
        assert out.split() == ["outside-denied", "own-killed"]
        assert outsider.poll() is None, "the outside process is untouched"
    finally:
        outsider.kill()
        outsider.wait()


def test_at_an_older_abi_asked_for_signals_are_not_scoped(world: Path) -> None:
    """``PI_SQUAD_TEST_LANDLOCK_ABI`` (tests only) makes the wrapper use an older ABI, as such
    a kernel would: at 5 a confined child can signal outside its tree (what namespaces must
    then stop), at the kernel's own it cannot."""
    if isolation().abi < 6:
        pytest.skip("signal scoping needs Landlock ABI 6")
    outsider = subprocess.Popen(["sleep", "60"])
    try:
        script = f"kill -0 {outsider.pid} 2>/dev/null && echo reachable || echo denied"
        outcomes = {}
        for abi in (5, None):
            argv = isolation(abi).confine(["bash", "-c", script], writable=["/dev/null"])
            code, out, err = start(argv, cwd=world)
            assert code == 0, err
            outcomes[abi] = out.strip()
        assert outcomes == {5: "reachable", None: "denied"}
    finally:
        outsider.kill()
        outsider.wait()


def test_a_confined_child_cannot_reach_an_abstract_unix_socket_made_outside(world: Path) -> None:
    """From ABI 6 the ruleset scopes abstract UNIX sockets: a host service listening on one is
    out of reach (at ABI 5 it is not)."""
    if isolation().abi < 6:
        pytest.skip("abstract socket scoping needs Landlock ABI 6")
    name = f"pi-squad-test-{os.getpid()}"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind("\0" + name)
    server.listen(4)
    try:
        connect = (
            "import socket, sys\n"
            "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
            "try:\n    s.connect('\\0' + sys.argv[1]); print('connected')\n"
            "except OSError as e:\n    print('refused', e.errno)\n"
        )
        outcomes = {}
        for abi in (5, None):
            argv = isolation(abi).confine(
                [sys.executable, "-c", connect, name], writable=["/dev/null"]
            )
            code, out, err = start(argv, cwd=world)
            assert code == 0, err
            outcomes[abi] = out.split()[0]
        assert outcomes == {5: "connected", None: "refused"}
    finally:
        server.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root may make device nodes at all")
def test_a_root_child_cannot_make_a_device_node_even_where_it_may_write(world: Path) -> None:
    """Landlock handles device creation and grants it beneath no path: a root child cannot make
    a node for the disk that holds pi-squad and write through it. Everything else it may do
    there, it still does."""
    g = world / "granted"
    block = f"os.mknod({str(g / 'disk')!r}, 0o600 | stat.S_IFBLK, os.makedev(7, 0))"
    steps = {
        "block device": block,
        "char device": f"os.mknod({str(g / 'mem')!r}, 0o600 | stat.S_IFCHR, os.makedev(1, 1))",
        "fifo": f"os.mkfifo({str(g / 'fifo')!r})",
        "file": f"write({str(g / 'file')!r})",
    }
    results = operations(world, [str(g)], steps)
    assert results == {
        "block device": "EACCES",
        "char device": "EACCES",
        "fifo": "ok",
        "file": "ok",
    }
    assert not (g / "disk").exists()
    unconfined = operations(world, [], {"block device": block}, confined=False)
    assert unconfined == {"block device": "ok"}, "root could, unconfined"
