"""Landlock on the real kernel: confined children write only beneath the granted paths.

Each test starts the confined command the way ``adapters/pi_rpc/runtime.py`` starts Pi
(``Popen`` with ``start_new_session``, the environment passed through) and has it report,
operation by operation, ``ok`` or the errno name. Running as root does not matter: Landlock
applies to root. The Landlock layer alone (``PI_SQUAD_ISOLATION=landlock``): the namespaces
bubblewrap adds around it are ``test_child_namespaces.py``'s.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pytest

from adapters.isolation.landlock import EXEC_SCRIPT, LandlockIsolation, select_isolation

SUPPORT = select_isolation({}).support()
pytestmark = pytest.mark.skipif(
    SUPPORT.mode != "landlock", reason=f"Landlock not enforceable here: {SUPPORT.reason}"
)

# A child that runs filesystem operations and prints {"name": "ok" | errno name} as JSON.
OPERATIONS = textwrap.dedent(
    """
    import errno, json, os, stat, sys

    def attempt(name, action):
        try:
            action()
        except OSError as error:
            results[name] = errno.errorcode.get(error.errno, str(error.errno))
        else:
            results[name] = "ok"

    def write(path, mode="w"):
        with open(path, mode) as handle:
            handle.write("x")

    results = {}
    for name, source in json.loads(sys.argv[1]):
        attempt(name, eval("lambda: " + source))
    print(json.dumps(results))
    """
)


def isolation(abi: int | None = None) -> LandlockIsolation:
    """Landlock alone, at the kernel's ABI or at most ``abi``."""
    environ = {"PI_SQUAD_ISOLATION": "landlock"}
    if abi is not None:
        environ["PI_SQUAD_TEST_LANDLOCK_ABI"] = str(abi)
    chosen = select_isolation(environ)
    assert isinstance(chosen, LandlockIsolation)
    assert chosen.sandbox is None
    return chosen


def start(
    argv: Sequence[str], *, cwd: Path, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    """Like ``PiRpcRuntime.spawn``: own session, environment passed through, pipes."""
    process = subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        start_new_session=True,
    )
    out, err = process.communicate(timeout=60)
    return process.returncode, out.decode(), err.decode()


def operations(
    steps: dict[str, str], *, writable: Sequence[str], cwd: Path, confined: bool = True
) -> dict[str, str]:
    argv = [sys.executable, "-c", OPERATIONS, json.dumps(list(steps.items()))]
    if confined:
        argv = isolation().confine(argv, writable=writable)
    code, out, err = start(argv, cwd=cwd)
    assert code == 0, err
    results: dict[str, str] = json.loads(out)
    return results


@pytest.fixture
def world(tmp_path: Path) -> Path:
    """``granted/`` (writable), its siblings ``protected/`` and ``granted-other/`` (not), each
    with a file ``f`` in it, and ``protected/sub/``."""
    for name in ("granted", "protected", "granted-other", "protected/sub"):
        (tmp_path / name).mkdir()
    for name in ("granted/f", "protected/f", "granted-other/f", "protected/sub/f"):
        (tmp_path / name).write_text("original")
    return tmp_path


def test_beneath_a_granted_directory_everything_is_writable(world: Path) -> None:
    g = world / "granted"
    (g / "sub").mkdir()
    results = operations(
        {
            "write existing": f"write({str(g / 'f')!r})",
            "append": f"write({str(g / 'f')!r}, 'a')",
            "create": f"write({str(g / 'new')!r})",
            "create deeper": f"write({str(g / 'sub' / 'new')!r})",
            "truncate": f"os.truncate({str(g / 'f')!r}, 0)",
            "rename": f"os.rename({str(g / 'new')!r}, {str(g / 'renamed')!r})",
            "rename across subdirectories": (
                f"os.rename({str(g / 'renamed')!r}, {str(g / 'sub' / 'moved')!r})"
            ),
            "mkdir": f"os.mkdir({str(g / 'd')!r})",
            "rmdir": f"os.rmdir({str(g / 'd')!r})",
            "symlink": f"os.symlink('f', {str(g / 'link')!r})",
            "mkfifo": f"os.mkfifo({str(g / 'fifo')!r})",
            "remove": f"os.remove({str(g / 'sub' / 'moved')!r})",
        },
        writable=[str(g)],
        cwd=world,
    )
    assert results == dict.fromkeys(results, "ok")
    assert (g / "f").read_text() == ""
    assert (g / "sub" / "new").read_text() == "x"


def test_outside_the_granted_directory_every_write_is_denied(world: Path) -> None:
    g, p = world / "granted", world / "protected"
    (g / "mine").write_text("mine")
    results = operations(
        {
            "write existing": f"write({str(p / 'f')!r})",
            "append": f"write({str(p / 'f')!r}, 'a')",
            "create": f"write({str(p / 'new')!r})",
            "create exclusive": f"os.open({str(p / 'new')!r}, os.O_CREAT | os.O_EXCL | 1)",
            "truncate": f"os.truncate({str(p / 'f')!r}, 0)",
            "remove": f"os.remove({str(p / 'f')!r})",
            "mkdir": f"os.mkdir({str(p / 'd')!r})",
            "rmdir": f"os.rmdir({str(p / 'sub')!r})",
            "symlink": f"os.symlink('f', {str(p / 'link')!r})",
            "mkfifo": f"os.mkfifo({str(p / 'fifo')!r})",
            "rename granted to protected": f"os.rename({str(g / 'mine')!r}, {str(p / 'mine')!r})",
            "rename protected to granted": f"os.rename({str(p / 'f')!r}, {str(g / 'stolen')!r})",
            "rename within protected": f"os.rename({str(p / 'f')!r}, {str(p / 'g')!r})",
            "hard link protected into granted": f"os.link({str(p / 'f')!r}, {str(g / 'hl')!r})",
            "write in the parent": f"write({str(world / 'top')!r})",
            "write in a granted name's sibling": f"write({str(world / 'granted-other' / 'f')!r})",
        },
        writable=[str(g)],
        cwd=world,
    )
    # A hard link out of a protected directory is refused as EXDEV by Landlock's refer check
    # (EACCES on kernels that check the other rights first); everything else is EACCES.
    link = results.pop("hard link protected into granted")
    assert link in {"EACCES", "EXDEV"}
    assert results == dict.fromkeys(results, "EACCES")
    assert (p / "f").read_text() == "original"
    assert (world / "granted-other" / "f").read_text() == "original"
    assert sorted(x.name for x in p.iterdir()) == ["f", "sub"]
    assert sorted(x.name for x in g.iterdir()) == ["f", "mine"]
    assert not (world / "top").exists()


def test_the_same_operations_succeed_unconfined(world: Path) -> None:
    """The denials above come from the confinement, not from file modes: unconfined (what a
    ``confine`` that returned ``argv`` unchanged would give), the same child may write."""
    p = world / "protected"
    steps = {"write existing": f"write({str(p / 'f')!r})", "mkdir": f"os.mkdir({str(p / 'd')!r})"}
    assert operations(steps, writable=[str(world / "granted")], cwd=world) == {
        "write existing": "EACCES",
        "mkdir": "EACCES",
    }
    assert operations(steps, writable=[], cwd=world, confined=False) == {
        "write existing": "ok",
        "mkdir": "ok",
    }


def test_grandchildren_are_confined_too(world: Path) -> None:
    g, p = world / "granted", world / "protected"
    script = (
        f'{sys.executable} -c \'open("{g}/by-grandchild", "w").write("x")\' && echo granted-ok; '
        f'{sys.executable} -c \'open("{p}/by-grandchild", "w").write("x")\' 2>/dev/null '
        "|| echo protected-denied; "
        f"(bash -c 'echo x > {p}/f') 2>/dev/null || echo nested-denied"
    )
    argv = isolation().confine(["bash", "-c", script], writable=[str(g), "/dev"])
    code, out, err = start(argv, cwd=world)
    assert code == 0, err
    assert out.split() == ["granted-ok", "protected-denied", "nested-denied"]
    assert (g / "by-grandchild").exists()
    assert not (p / "by-grandchild").exists()
    assert (p / "f").read_text() == "original"


def test_dev_null_is_writable_when_dev_or_dev_null_is_granted(world: Path) -> None:
    steps = {"dev null": "write('/dev/null')"}
    assert operations(steps, writable=["/dev"], cwd=world) == {"dev null": "ok"}
    assert operations(steps, writable=["/dev/null"], cwd=world) == {"dev null": "ok"}
    assert operations(steps, writable=[str(world / "granted")], cwd=world) == {"dev null": "EACCES"}


def test_a_single_granted_file_grants_nothing_beside_it(world: Path) -> None:
    g = world / "granted"
    results = operations(
        {
            "write the file": f"write({str(g / 'f')!r})",
            "truncate the file": f"os.truncate({str(g / 'f')!r}, 0)",
            "create beside it": f"write({str(g / 'new')!r})",
            "remove it": f"os.remove({str(g / 'f')!r})",
        },
        writable=[str(g / "f")],
        cwd=world,
    )
    assert results == {
        "write the file": "ok",
        "truncate the file": "ok",
        "create beside it": "EACCES",
        "remove it": "EACCES",
    }


def test_the_confined_child_keeps_pid_session_environment_and_pipes(world: Path) -> None:
    """What ``PiRpcRuntime`` relies on: the wrapper execs in place."""
    probe = (
        "import os, sys; line = sys.stdin.readline().strip(); "
        "print(os.getpid(), os.getsid(0), os.getpgid(0), os.environ['PROBE_VARIABLE'], line)"
    )
    argv = isolation().confine([sys.executable, "-c", probe], writable=[str(world / "granted")])
    process = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=world,
        env={**os.environ, "PROBE_VARIABLE": "passed", "PYTHONPATH": ""},
        start_new_session=True,
    )
    out, err = process.communicate(b"hello over the pipe\n", timeout=60)
    assert process.returncode == 0, err
    pid, sid, pgid, variable, line = out.decode().split(maxsplit=4)
    assert int(pid) == int(sid) == int(pgid) == process.pid
    assert variable == "passed"
    assert line.strip() == "hello over the pipe"


# --- the wrapper refuses, and then never runs the command ------------------------------------


def wrapper(*arguments: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    code, out, err = start([sys.executable, "-P", EXEC_SCRIPT, *arguments], cwd=cwd, env=env)
    assert out == ""
    return code, err


def marker_command(world: Path) -> list[str]:
    """A command that would leave ``granted/ran`` behind if it ran at all."""
    return ["touch", str(world / "granted" / "ran")]


@pytest.mark.parametrize(
    ("arguments", "mentioned"),
    [
        (["--write", "granted"], "not absolute"),
        (["--write", "./granted"], "not absolute"),
        (["--write", "/nonexistent/pi-squad-test"], "does not exist"),
        (["--write"], "not absolute: '--'"),
        (["--read", "/tmp"], "unexpected argument"),
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
    results = operations(
        {"write protected": f"write({str(world / 'protected' / 'f')!r})"},
        writable=[str(world / "granted")],
        cwd=world,
    )
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
    results = operations(
        {
            "block device": block,
            "char device": f"os.mknod({str(g / 'mem')!r}, 0o600 | stat.S_IFCHR, os.makedev(1, 1))",
            "fifo": f"os.mkfifo({str(g / 'fifo')!r})",
            "file": f"write({str(g / 'file')!r})",
        },
        writable=[str(g)],
        cwd=world,
    )
    assert results == {
        "block device": "EACCES",
        "char device": "EACCES",
        "fifo": "ok",
        "file": "ok",
    }
    assert not (g / "disk").exists()
    unconfined = operations({"block device": block}, writable=[], cwd=world, confined=False)
    assert unconfined == {"block device": "ok"}, "root could, unconfined"
