"""Bubblewrap on the real kernel: each child in PID and IPC namespaces of its own, without
capabilities, with Landlock inside (``adapters/isolation/bwrap.py``). Needs bubblewrap (skipped
otherwise; CI installs it) and Landlock for the confined cases; the device-node case needs root.

Each test starts the command as ``PiRpcRuntime.spawn`` does (``Popen``, own session, pipes) and
stops it as the runtime does (``terminate``: SIGTERM to the process group, SIGKILL after a
grace period).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from adapters.isolation.bwrap import probe_bubblewrap
from adapters.isolation.landlock import PROBED, LandlockIsolation, NoIsolation, select_isolation
from adapters.pi_rpc.termination import terminate
from tests.integration.child_process import popen

BWRAP = probe_bubblewrap(os.environ)
pytestmark = pytest.mark.skipif(BWRAP.sandbox is None, reason=f"needs bubblewrap: {BWRAP.reason}")


def confined() -> LandlockIsolation:
    chosen = select_isolation(PROBED, {})
    if not isinstance(chosen, LandlockIsolation):
        pytest.skip("needs Landlock")
    assert chosen.sandbox is not None
    return chosen


def enclosing() -> NoIsolation:
    """Namespaces for a child that is not confined (as a flow child without a grant)."""
    assert BWRAP.sandbox is not None
    return NoIsolation("not confined here", BWRAP.sandbox)


def finished(argv: Sequence[str], cwd: Path, stdin: bytes = b"") -> tuple[int, str, str]:
    process = popen(argv, cwd=cwd)
    out, err = process.communicate(stdin, timeout=60)
    return process.returncode, out.decode(), err.decode()


@pytest.fixture
def outsider() -> Iterator[subprocess.Popen[bytes]]:
    """A process outside any child: the driver, or a sibling's Pi."""
    process = subprocess.Popen(["sleep", "120"])
    yield process
    process.kill()
    process.wait()


def alive(heartbeat: Path, seconds: float = 1.0) -> bool:
    """Whether something still appends to ``heartbeat``."""
    size = heartbeat.stat().st_size if heartbeat.exists() else 0
    time.sleep(seconds)
    return (heartbeat.stat().st_size if heartbeat.exists() else 0) != size


DAEMON = 'setsid -f bash -c "while :; do echo x >> {heartbeat}; sleep 0.1; done"'


def test_a_child_sees_and_signals_nothing_outside_its_own_tree(
    tmp_path: Path, outsider: subprocess.Popen[bytes]
) -> None:
    script = (
        'echo "pid=$$ visible=$(ls -d /proc/[0-9]* | wc -l)"; '
        f'kill -USR1 {outsider.pid} 2>&1; echo "kill rc=$?"'
    )
    for isolation in (confined(), enclosing()):
        argv = isolation.enclose(["bash", "-c", script])
        if isinstance(isolation, LandlockIsolation):
            argv = isolation.confine(["bash", "-c", script], writable=[str(tmp_path)])
        code, out, err = finished(argv, tmp_path)
        assert code == 0, err
        assert "No such process" in out, out
        assert "kill rc=1" in out, out
        pid, visible = (int(part.split("=")[1]) for part in out.split()[:2])
        assert pid < 10, "its own PID namespace"
        assert visible < 10, out
    assert outsider.poll() is None, "untouched"


def test_a_detached_daemon_ends_with_the_child_that_started_it(tmp_path: Path) -> None:
    heartbeat = tmp_path / "heartbeat"
    script = f"{DAEMON.format(heartbeat=heartbeat)}; sleep 0.5; echo started"
    argv = confined().confine(["bash", "-c", script], writable=[str(tmp_path)])
    code, out, err = finished(argv, tmp_path)
    assert (code, out.strip()) == (0, "started"), err
    assert heartbeat.exists(), "the daemon ran"
    assert not alive(heartbeat), "the daemon outlived the child"


def test_stopping_a_child_as_the_runtime_does_ends_its_whole_tree(tmp_path: Path) -> None:
    heartbeat = tmp_path / "heartbeat"
    script = f"{DAEMON.format(heartbeat=heartbeat)}; trap '' TERM; echo up; sleep 60"
    process = popen(
        confined().confine(["bash", "-c", script], writable=[str(tmp_path)]), cwd=tmp_path
    )
    assert process.stdout is not None
    assert process.stdout.readline() == b"up\n"
    assert alive(heartbeat, 0.5)
    reaped = threading.Event()

    def wait() -> None:
        process.wait()
        reaped.set()

    waiter = threading.Thread(target=wait)
    waiter.start()
    started = time.monotonic()
    terminate(process, reaped, 3.0, "test")
    waiter.join()
    assert time.monotonic() - started < 3.0, "SIGTERM to bubblewrap was enough"
    assert not alive(heartbeat), "the daemon outlived the stopped child"


def test_pipes_environment_and_working_directory_pass_through(tmp_path: Path) -> None:
    probe = 'read line; echo "$line|$PROBE_VARIABLE|$PWD"'
    argv = confined().confine(["bash", "-c", probe], writable=[str(tmp_path)])
    process = popen(argv, cwd=tmp_path, env={"PROBE_VARIABLE": "passed"})
    out, err = process.communicate(b"over the pipe\n", timeout=60)
    assert process.returncode == 0, err
    assert out.decode().strip() == f"over the pipe|passed|{tmp_path}"


def test_writes_outside_the_grants_still_fail_inside_the_namespaces(tmp_path: Path) -> None:
    (tmp_path / "granted").mkdir()
    (tmp_path / "other").mkdir()
    script = (
        f"echo a > {tmp_path}/granted/f && echo granted-ok; "
        f"echo a > {tmp_path}/other/f 2>/dev/null || echo other-denied"
    )
    argv = confined().confine(["bash", "-c", script], writable=[str(tmp_path / "granted")])
    code, out, err = finished(argv, tmp_path)
    assert code == 0, err
    assert out.split() == ["granted-ok", "other-denied"]


@pytest.mark.skipif(os.geteuid() != 0, reason="only root may make device nodes at all")
def test_a_root_child_has_no_capabilities_and_no_disks(tmp_path: Path) -> None:
    """Even without Landlock (an unconfined child), root in the namespaces cannot make a device
    node, and its ``/dev`` holds no disks."""
    script = (
        f'mknod {tmp_path}/disk b 7 0 2>&1; echo "mknod rc=$?"; '
        "grep CapEff /proc/self/status; ls /dev"
    )
    code, out, err = finished(enclosing().enclose(["bash", "-c", script]), tmp_path)
    assert code == 0, err
    assert "Operation not permitted" in out, out
    assert "mknod rc=1" in out, out
    assert "CapEff:\t0000000000000000" in out, out
    devices = set(out.split("CapEff:")[1].split()[1:])
    assert {"null", "zero", "urandom"} <= devices
    assert not {name for name in devices if name.startswith(("sd", "vd", "nvme", "loop"))}
    assert not (tmp_path / "disk").exists()


def test_a_confined_child_cannot_chmod_records_beneath_a_read_only_root(tmp_path: Path) -> None:
    """Landlock does not govern ``chmod``; the squad root mounted read-only in the child's
    namespace does, but for the child's own ledger bound writable on top."""
    root = tmp_path / "root"
    ledger = root / "squad" / "task"
    ledger.mkdir(parents=True)
    record = root / "squad" / "squad.json"
    record.write_text("{}")
    own = ledger / "progress.json"
    own.write_text("{}")
    script = (
        f"chmod 000 {record}; echo record=$?; chmod 600 {own}; echo own=$?; "
        f"echo x > {ledger}/new && echo wrote-ledger"
    )
    argv = confined().confine(["bash", "-c", script], writable=[str(ledger)], read_only=[str(root)])
    code, out, err = finished(argv, tmp_path)
    assert code == 0, err
    assert "record=1" in out, out  # EROFS
    assert (record.stat().st_mode & 0o777) != 0
    assert "own=0" in out
    assert "wrote-ledger" in out


def test_a_host_services_socket_under_run_is_out_of_a_childs_reach(tmp_path: Path) -> None:
    """Landlock does not govern connecting to a path socket (``docker.sock``, D-Bus, an ssh
    agent under ``/run/user``); the child's ``/run`` is an empty tmpfs, so there is none."""
    import socket
    import uuid

    path = f"/run/pi-squad-test-{uuid.uuid4().hex}.sock"
    try:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
    except OSError as error:
        pytest.skip(f"cannot make a socket under /run here: {error}")
    server.listen(1)
    try:
        probe = (
            "import socket, sys\n"
            "s = socket.socket(socket.AF_UNIX)\n"
            f"try:\n    s.connect({path!r}); print('connected')\n"
            "except OSError as e:\n    print('refused', e.errno)\n"
            "print('resolver', open('/etc/resolv.conf').read() != '')\n"
        )
        code, out, err = finished(enclosing().enclose(["python3", "-c", probe]), tmp_path)
        assert code == 0, err
        assert "refused" in out, out
        assert "resolver True" in out, "DNS configuration still readable"
        # Outside any child the same socket answers: the test would pass for no reason otherwise.
        client = socket.socket(socket.AF_UNIX)
        client.connect(path)
        client.close()
    finally:
        server.close()
        os.unlink(path)


def test_a_users_own_socket_in_tmp_is_out_of_a_childs_reach(tmp_path: Path) -> None:
    """A tmux server's socket (``/tmp/tmux-UID/default``) is a shell as the operator: a child
    finds its directory empty, and a socket left loose in ``/tmp`` refuses connections."""
    import socket
    import tempfile

    directory = Path(tempfile.mkdtemp(prefix="pi-squad-test-tmux-", dir="/tmp"))
    loose = Path(f"/tmp/pi-squad-test-{directory.name}.sock")
    servers = []
    try:
        for path in (directory / "default", loose):
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind(str(path))
            server.listen(1)
            servers.append(server)
        probe = (
            "import socket\n"
            f"for path in ({str(directory / 'default')!r}, {str(loose)!r}):\n"
            "    s = socket.socket(socket.AF_UNIX)\n"
            "    try:\n        s.connect(path); print(path, 'connected')\n"
            "    except OSError as e:\n        print(path, 'refused', e.errno)\n"
        )
        code, out, err = finished(enclosing().enclose(["python3", "-c", probe]), tmp_path)
        assert code == 0, err
        assert "connected" not in out, out
        assert out.count("refused") == 2, out
        client = socket.socket(socket.AF_UNIX)  # outside a child both answer
        client.connect(str(directory / "default"))
        client.close()
    finally:
        for server in servers:
            server.close()
        loose.unlink(missing_ok=True)
        (directory / "default").unlink(missing_ok=True)
        directory.rmdir()
