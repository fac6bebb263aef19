"""The outer isolation layer: each child in process namespaces of its own, with bubblewrap.

``Bubblewrap.wrap`` prefixes a child's argv with ``bwrap`` (a packaged, maintained tool; the
Landlock wrapper runs inside it) so that the child's whole process tree

- lives in its own PID namespace: it sees, signals and ``ptrace``s only its own processes (the
  driver's and siblings' pids do not exist there), and when its first process (Pi) exits,
  bubblewrap's init exits and the kernel kills everything left in it, a ``setsid`` daemon
  included; ``--die-with-parent`` does the same when the ``bwrap`` the runtime started is
  killed, which is how the runtime stops a child;
- has its own IPC namespace (System V IPC, POSIX message queues);
- has no capabilities (``--cap-drop ALL``): a root child cannot ``mknod`` a device, mount,
  ``ptrace`` what it does not own, or override file permissions;
- gets a fresh ``/dev`` with only the harmless nodes (``null``, ``zero``, ``urandom``, ``tty``,
  ...), no disks, and a ``/proc`` of its own namespace;
- runs in a new session (``--new-session``): no controlling terminal to push input into.

The filesystem is bound as it is (``--bind / /``): what a child may write stays Landlock's
decision (``adapters/isolation/landlock_exec.py``), and every path means what it means outside. The
network is shared: a child needs its model.

``probe_bubblewrap`` runs the exact options once per process (``true`` inside): a bwrap that
is missing, or that the kernel or a security module refuses (unprivileged user namespaces
disabled, an AppArmor restriction), is reported with the reason and never used.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
from collections.abc import Mapping, Sequence

import attrs

BWRAP_CANDIDATES = ("/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap")
"""Where distributions install bwrap, tried before ``PATH``: a directory on the operator's
``PATH`` that a child can write (a project's ``.venv/bin``) must not choose it."""
INSTALL_HINT = (
    "install bubblewrap: apt-get install bubblewrap (Debian, Ubuntu), dnf install bubblewrap "
    "(Fedora, RHEL), pacman -S bubblewrap (Arch)"
)
NAMESPACE_OPTIONS = (
    "--unshare-pid",
    "--unshare-ipc",
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
    "--bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
)
PROBE_TIMEOUT_SECONDS = 10.0


@attrs.frozen
class Bubblewrap:
    """A bwrap that ran :data:`NAMESPACE_OPTIONS` on this machine."""

    path: str

    def wrap(
        self,
        argv: Sequence[str],
        *,
        read_only: Sequence[str] = (),
        writable: Sequence[str] = (),
    ) -> list[str]:
        """``argv`` in the namespaces, with ``/run`` hidden (:func:`run_mounts`); each
        ``read_only`` directory mounted read-only there, the ``writable`` paths beneath one
        bound writable again on top (later mounts win)."""
        if isinstance(argv, str):
            raise TypeError("argv is a sequence of strings, not one string")
        if not argv:
            raise ValueError("cannot enclose an empty argv")
        mounts = [*run_mounts(read_only, writable), *socket_mounts(keep=(*read_only, *writable))]
        for directory in read_only:
            mounts += ["--ro-bind", directory, directory]
            for path in writable:
                if _beneath(path, directory):
                    mounts += ["--bind", path, path]
        return [self.path, *NAMESPACE_OPTIONS, *mounts, "--", *argv]


HIDDEN_RUN = "/run"
"""Where host services keep their path sockets (``docker.sock``, the system and user D-Bus, an
ssh or gpg agent under ``/run/user/UID``): Landlock does not govern connecting to one, so a
child's namespace gets an empty ``/run`` instead."""


def run_mounts(
    read_only: Sequence[str] = (),
    writable: Sequence[str] = (),
    resolver: str = "/etc/resolv.conf",
) -> list[str]:
    """bwrap options hiding :data:`HIDDEN_RUN` behind an empty tmpfs, then binding back what a
    child needs from it: the directory of the DNS configuration where ``resolver`` leads into
    it (systemd-resolved's stub), and any granted path inside it (the ``read_only`` ones are
    bound by the caller, after these)."""
    mounts = ["--tmpfs", HIDDEN_RUN]
    target = os.path.realpath(resolver)
    if _beneath(target, HIDDEN_RUN) and os.path.exists(target):
        directory = os.path.dirname(target)
        mounts += ["--ro-bind", directory, directory]
    for path in writable:
        if _beneath(path, HIDDEN_RUN) and not any(_beneath(path, d) for d in read_only):
            mounts += ["--bind", path, path]
    return mounts


SOCKET_ROOTS = ("/tmp",)  # noqa: S108 (scanned for sockets, never written)
"""Where users' own services leave path sockets: a tmux server (``/tmp/tmux-UID/default``, a
shell as the operator), an ssh agent (``/tmp/ssh-*/agent.N``), the X server
(``/tmp/.X11-unix``)."""
_SCAN_LIMIT = 4096  # entries looked at per directory: a crowded /tmp costs a bounded scan


def socket_mounts(keep: Sequence[str] = (), roots: Sequence[str] = SOCKET_ROOTS) -> list[str]:
    """bwrap options that hide the path sockets found in ``roots`` when a child starts: a
    socket there is covered by ``/dev/null`` (connecting is refused), a directory holding one
    by an empty tmpfs, unless it holds (or is) a path in ``keep``. A socket made after the
    child started is not hidden."""
    mounts: list[str] = []
    for root in roots:
        for entry in _entries(root):
            if _is_socket(entry):
                mounts += ["--ro-bind", "/dev/null", entry.path]
            elif (
                entry.is_dir(follow_symlinks=False)
                and not any(k == entry.path or _beneath(k, entry.path) for k in keep)
                and any(_is_socket(inner) for inner in _entries(entry.path))
            ):
                mounts += ["--tmpfs", entry.path]
    return mounts


def _entries(directory: str) -> list[os.DirEntry[str]]:
    found: list[os.DirEntry[str]] = []
    try:
        with os.scandir(directory) as listing:
            for entry in listing:
                found.append(entry)
                if len(found) >= _SCAN_LIMIT:
                    break
    except OSError:
        return []
    return found


def _is_socket(entry: os.DirEntry[str]) -> bool:
    try:
        return stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode)
    except OSError:
        return False


def _beneath(path: str, directory: str) -> bool:
    return path != directory and path.startswith(directory.rstrip("/") + "/")


@attrs.frozen
class BubblewrapProbe:
    """``sandbox`` where bubblewrap works here, else ``None`` and ``reason``."""

    sandbox: Bubblewrap | None
    reason: str | None


def find_bwrap(environ: Mapping[str, str]) -> str | None:
    for candidate in BWRAP_CANDIDATES:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("bwrap", path=environ.get("PATH", os.defpath))


def probe_bubblewrap(environ: Mapping[str, str]) -> BubblewrapProbe:
    """Whether bubblewrap runs a command with :data:`NAMESPACE_OPTIONS` here; never raises."""
    path = find_bwrap(environ)
    if path is None:
        return BubblewrapProbe(None, f"bubblewrap (bwrap) is not installed; {INSTALL_HINT}")
    failure = _probe(os.path.realpath(path))
    if failure is not None:
        return BubblewrapProbe(None, f"bubblewrap at {path} cannot run here: {failure}")
    return BubblewrapProbe(Bubblewrap(os.path.realpath(path)), None)


@functools.cache
def _probe(path: str) -> str | None:
    """``None`` when ``path`` runs ``true`` in the namespaces, else why not (once per path)."""
    try:
        done = subprocess.run(
            [path, *NAMESPACE_OPTIONS, "--", "true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as error:
        return str(error)
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return (detail[-1] if detail else f"exit status {done.returncode}") + (
            " (unprivileged user namespaces may be disabled: see the kernel.unprivileged_"
            "userns_clone and kernel.apparmor_restrict_unprivileged_userns settings)"
            if os.geteuid() != 0
            else ""
        )
    return None
