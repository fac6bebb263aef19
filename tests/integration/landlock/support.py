"""Starting a command confined by Landlock alone as ``PiRpcRuntime.spawn`` starts Pi, and a child
that reports each filesystem operation's outcome."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

from adapters.isolation.landlock import (
    EXEC_SCRIPT,
    PROBED,
    IsolationSetting,
    LandlockIsolation,
    select_isolation,
)
from tests.integration.child_process import popen

SUPPORT = select_isolation(PROBED, {}).support()


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
    setting = IsolationSetting(mode="landlock", abi_cap="" if abi is None else str(abi))
    chosen = select_isolation(setting, {})
    assert isinstance(chosen, LandlockIsolation)
    assert chosen.sandbox is None
    return chosen


def start(
    argv: Sequence[str], *, cwd: Path, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    """``argv`` started as :func:`tests.integration.child_process.popen` starts it, run to its
    end; its exit code, stdout and stderr."""
    process = popen(argv, cwd=cwd, env=env)
    out, err = process.communicate(timeout=60)
    return process.returncode, out.decode(), err.decode()


def operations(
    cwd: Path, writable: Sequence[str], steps: dict[str, str], *, confined: bool = True
) -> dict[str, str]:
    """What each of ``steps`` (a name and a Python expression) came to, run in ``cwd`` by a
    child confined to ``writable`` (unless not ``confined``): ``ok`` or the errno's name."""
    argv = [sys.executable, "-c", OPERATIONS, json.dumps(list(steps.items()))]
    if confined:
        argv = isolation().confine(argv, writable=writable)
    code, out, err = start(argv, cwd=cwd)
    assert code == 0, err
    results: dict[str, str] = json.loads(out)
    return results


def wrapper(*arguments: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    code, out, err = start([sys.executable, "-P", EXEC_SCRIPT, *arguments], cwd=cwd, env=env)
    assert out == ""
    return code, err


def marker_command(world: Path) -> list[str]:
    """A command that would leave ``granted/ran`` behind if it ran at all."""
    return ["touch", str(world / "granted" / "ran")]
