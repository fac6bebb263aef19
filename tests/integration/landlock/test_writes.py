"""Landlock on the real kernel: beneath a granted directory everything is writable and outside it
every write is denied, grandchildren included, while the child keeps its pid, session,
environment and pipes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.integration.child_process import popen
from tests.integration.landlock.support import SUPPORT, isolation, operations, start

pytestmark = pytest.mark.skipif(
    SUPPORT.mode != "landlock", reason=f"Landlock not enforceable here: {SUPPORT.reason}"
)


def test_beneath_a_granted_directory_everything_is_writable(world: Path) -> None:
    g = world / "granted"
    (g / "sub").mkdir()
    steps = {
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
    }
    results = operations(world, [str(g)], steps)
    assert results == dict.fromkeys(results, "ok")
    assert (g / "f").read_text() == ""
    assert (g / "sub" / "new").read_text() == "x"


def test_outside_the_granted_directory_every_write_is_denied(world: Path) -> None:
    g, p = world / "granted", world / "protected"
    (g / "mine").write_text("mine")
    steps = {
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
    }
    results = operations(world, [str(g)], steps)
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
    assert operations(world, [str(world / "granted")], steps) == {
        "write existing": "EACCES",
        "mkdir": "EACCES",
    }
    assert operations(world, [], steps, confined=False) == {
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
    assert operations(world, ["/dev"], steps) == {"dev null": "ok"}
    assert operations(world, ["/dev/null"], steps) == {"dev null": "ok"}
    assert operations(world, [str(world / "granted")], steps) == {"dev null": "EACCES"}


def test_a_single_granted_file_grants_nothing_beside_it(world: Path) -> None:
    g = world / "granted"
    steps = {
        "write the file": f"write({str(g / 'f')!r})",
        "truncate the file": f"os.truncate({str(g / 'f')!r}, 0)",
        "create beside it": f"write({str(g / 'new')!r})",
        "remove it": f"os.remove({str(g / 'f')!r})",
    }
    results = operations(world, [str(g / "f")], steps)
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
    process = popen(argv, cwd=world, env={"PROBE_VARIABLE": "passed", "PYTHONPATH": ""})
    out, err = process.communicate(b"hello over the pipe\n", timeout=60)
    assert process.returncode == 0, err
    pid, sid, pgid, variable, line = out.decode().split(maxsplit=4)
    assert int(pid) == int(sid) == int(pgid) == process.pid
    assert variable == "passed"
    assert line.strip() == "hello over the pipe"
