"""Run a command that, with every process it starts, can write only beneath the given paths.

Usage (``LandlockIsolation.confine`` builds this argv; it runs the file by path, with ``-P``, so
neither the child's working directory nor its name as a package decides what is imported)::

    python -P .../adapters/isolation/landlock_exec.py [--abi N] --write DIR [--write DIR ...]
    [--read DIR ...] -- COMMAND ...

It builds a Landlock ruleset that handles the write-type filesystem rights of the running
kernel's ABI, or of ABI ``N`` where ``--abi`` asks for an older one (``write_rights``), grants
them beneath each ``--write`` path except device creation (``MAKE_CHAR``, ``MAKE_BLOCK``: never
granted, so not even a root child can make a node for a disk and write to it), scopes signals
and abstract UNIX sockets to the child's own domain from ABI 6, sets ``no_new_privs``, restricts
itself, then ``execvp``s the command: same process, same process group and session, same
environment, same descriptors. Landlock domains are inherited across ``fork`` and ``execve``
and cannot be left, so every descendant is confined too. Reading and executing stay
unrestricted unless a ``--read`` path is given: then reading files, listing directories and
executing (``READ_RIGHTS``) are handled too, and granted only beneath each ``--read`` and each
``--write`` path (a delegated worker's allowlist, ``adapters/isolation/readable.py``).

A ``--write`` or ``--read`` path must be absolute and exist. A directory grants every write
right beneath it; anything else (a device such as ``/dev/null``, a regular file) grants only
the rights that apply to one file: writing, truncating and device ioctls.

On any failure (bad arguments, no Landlock, a syscall refused, the command not found) it writes
one line to stderr and exits with status 126; it never runs the command unconfined.

Only the standard library and ``landlockpy`` are imported, and nothing else from this project:
this module starts once per child process, so its start-up time counts.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not ``typing.TYPE_CHECKING``: importing typing costs start-up time
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import NoReturn

EXIT_REFUSED = 126
PROGRAM = "pi-squad landlock_exec"
MINIMUM_ABI = 3
"""Landlock ABI 1 and 2 (Linux 5.13 to 6.1) cannot deny ``truncate(2)``: any file could be
emptied. Below ABI 3 (Linux 6.2) this module refuses, and the selector reports no isolation."""

# The write-type filesystem rights (bit values of ``LANDLOCK_ACCESS_FS_*``) and the first ABI
# that has each. IOCTL_DEV counts as a write: on a device opened read-only, ioctls can still
# change the device (TIOCSTI pushes input into a terminal; block and loop ioctls reconfigure
# disks when run as root). RESOLVE_UNIX is never handled; READ_RIGHTS only with ``--read``.
EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13
TRUNCATE = 1 << 14
IOCTL_DEV = 1 << 15

WRITE_RIGHTS_SINCE_ABI: dict[int, int] = {
    WRITE_FILE: 1,
    REMOVE_DIR: 1,
    REMOVE_FILE: 1,
    MAKE_CHAR: 1,
    MAKE_DIR: 1,
    MAKE_REG: 1,
    MAKE_SOCK: 1,
    MAKE_FIFO: 1,
    MAKE_BLOCK: 1,
    MAKE_SYM: 1,
    REFER: 2,
    TRUNCATE: 3,
    IOCTL_DEV: 5,
}
FILE_RIGHTS = WRITE_FILE | TRUNCATE | IOCTL_DEV
"""The write rights Landlock accepts on a rule for a single file (not a directory)."""
READ_RIGHTS = EXECUTE | READ_FILE | READ_DIR
"""Handled only when reads are restricted (every ABI has them); beneath a readable directory
all are granted, on a single file all but ``READ_DIR``."""
NEVER_GRANTED = MAKE_CHAR | MAKE_BLOCK
"""Handled (so denied everywhere) but granted beneath no path: a device node made in a writable
directory would open the device it names, e.g. the disk holding pi-squad's own code."""
SIGNAL_SCOPE_ABI = 6
"""From this ABI the domain's signals and abstract UNIX sockets are scoped to it
(``domain.isolation_level.SCOPED_ABI``)."""


class Refused(Exception):
    """Why the command is not run."""


def write_rights(abi: int) -> int:
    """The handled (and, beneath a writable directory, granted) rights at Landlock ``abi``."""
    mask = 0
    for right, since in WRITE_RIGHTS_SINCE_ABI.items():
        if abi >= since:
            mask |= right
    return mask


def parse(
    arguments: Sequence[str],
) -> tuple[list[str], list[str], int | None, list[str] | None]:
    """``(writable paths, command, abi, readable paths)`` from ``[--abi N] --write P ...
    [--read P ...] -- COMMAND ...`` (``abi``: ``None`` for the kernel's own; ``readable``:
    ``None`` when no ``--read`` is given, reads unrestricted); ``Refused`` if bad."""
    writable: list[str] = []
    readable: list[str] | None = None
    abi: int | None = None
    index = 0
    while index < len(arguments):
        argument = arguments[index]
        if argument == "--":
            command = list(arguments[index + 1 :])
            if not command or not command[0]:
                raise Refused("no command after --")
            return writable, command, abi, readable
        if argument not in ("--write", "--read", "--abi") or index + 1 >= len(arguments):
            raise Refused(
                f"unexpected argument {argument!r}: usage: [--abi N] --write DIR ... "
                "[--read DIR ...] -- COMMAND [ARG ...]"
            )
        if argument == "--abi":
            value = arguments[index + 1]
            if not value.isdigit() or int(value) < MINIMUM_ABI:
                raise Refused(f"--abi is {value!r}: a whole number from {MINIMUM_ABI} is needed")
            abi = int(value)
            index += 2
            continue
        path = arguments[index + 1]
        if not os.path.isabs(path):
            raise Refused(f"{argument} path is not absolute: {path!r}")
        if not os.path.exists(path):
            raise Refused(f"{argument} path does not exist: {path!r}")
        if argument == "--read":
            readable = [*(readable or []), path]
        else:
            writable.append(path)
        index += 2
    raise Refused("missing -- before the command")


def confine_self(
    writable: Sequence[str], abi: int | None = None, readable: Sequence[str] | None = None
) -> int:
    """Restrict this process (and its future children) to writing beneath ``writable``, at
    Landlock ``abi`` (``None``: the kernel's; an older one leaves out what came later, as
    that kernel would); unless ``readable`` is ``None``, also to reading and executing
    beneath ``readable`` and ``writable``.

    Returns the Landlock ABI used. ``Refused`` when Landlock is missing or older than asked;
    ``OSError`` when a syscall fails. The restriction is irreversible.
    """
    import landlockpy  # noqa: PLC0415 (only here: the argument errors above need no ctypes)

    kernel = landlockpy.abi_version()
    if kernel < MINIMUM_ABI:
        raise Refused(
            "Landlock is not available (this kernel reports none)"
            if kernel == 0
            else f"Landlock ABI {kernel} is older than {MINIMUM_ABI}: it cannot deny truncate(2)"
        )
    if abi is not None and abi > kernel:
        raise Refused(f"Landlock ABI {abi} was asked for; this kernel has {kernel}")
    abi = kernel if abi is None else abi
    reads = 0 if readable is None else READ_RIGHTS
    rights = landlockpy.AccessFS(write_rights(abi) | reads)
    granted = rights & ~landlockpy.AccessFS(NEVER_GRANTED)
    file_rights = rights & landlockpy.AccessFS(FILE_RIGHTS | (reads & ~READ_DIR))
    read_only = landlockpy.AccessFS(reads)
    # From ABI 6 the domain may not signal processes outside it, nor connect to abstract UNIX
    # sockets made outside it: a child cannot kill the parent that judges it, stop a sibling's
    # tree or open its Node inspector (SIGUSR1), nor talk to unconfined host services that
    # listen on abstract sockets.
    scoped = (
        landlockpy.Scope.SIGNAL | landlockpy.Scope.ABSTRACT_UNIX_SOCKET
        if abi >= SIGNAL_SCOPE_ABI
        else landlockpy.Scope.NONE
    )
    with landlockpy.Ruleset(
        handled_fs=rights,
        handled_net=landlockpy.AccessNet.NONE,
        scoped=scoped,
        best_effort=False,
    ) as ruleset:
        if ruleset.handled_fs != rights:
            raise Refused(f"the ruleset handles {ruleset.handled_fs:#x}, not {rights:#x}")
        for path in writable:
            ruleset.allow_path(path, granted if os.path.isdir(path) else file_rights)
        for path in readable or ():
            ruleset.allow_path(
                path,
                read_only if os.path.isdir(path) else read_only & ~landlockpy.AccessFS(READ_DIR),
            )
        ruleset.restrict(no_new_privs=True)
    return abi


def refuse(reason: str) -> NoReturn:
    """One line on stderr, status 126, no command."""
    line = f"{PROGRAM}: {reason}; the command was not run\n".replace("\r", " ")
    try:
        os.write(2, line.encode("utf-8", "backslashreplace"))
    finally:
        os._exit(EXIT_REFUSED)


def main(arguments: Sequence[str]) -> NoReturn:
    try:
        writable, command, abi, readable = parse(arguments)
        confine_self(writable, abi, readable)
    except Refused as error:
        refuse(str(error))
    except OSError as error:
        refuse(f"cannot confine: {error.strerror or error}")
    except Exception as error:  # never fall through to an unconfined exec
        refuse(f"cannot confine: {type(error).__name__}: {error}")
    try:
        os.execvp(command[0], command)  # noqa: S606 (the point: exec, confined, no shell)
    except OSError as error:
        refuse(f"cannot run {command[0]!r}: {error.strerror or error}")


if __name__ == "__main__":
    main(sys.argv[1:])
